"""TLS on every service through the same options, and on the broker links: the options
are checked before serving (one error naming the option), a mutual-TLS service refuses a
client without a certificate, and a ``tls://`` or ``amqps://`` broker that does not offer
TLS (the local NATS and RabbitMQ do not) is refused with a message saying so."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.security.certs import Certs, make_certs
from tests.security.servers import serving
from twinsched.cli import app
from twinsched.twin.auth.tls import TlsError, TlsFiles, tls_files
from twinsched.twin.broker.loop import BrokerError
from twinsched.twin.broker.tls import CA_ENV, CERT_ENV, KEY_ENV, client_context
from twinsched.twin.broker.url import BrokerConfigError, parse_broker_url


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def test_the_tls_options_are_checked_before_serving(certs: Certs, tmp_path: Path) -> None:
    assert tls_files(None, None, None) is None
    files = tls_files(certs.server_cert, certs.server_key, certs.ca)
    assert files is not None and files.uvicorn()["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    cases = [
        ((None, certs.server_key, None), "--ssl-keyfile needs --ssl-certfile"),
        ((certs.server_cert, None, None), "--ssl-certfile needs --ssl-keyfile"),
        ((tmp_path / "no.pem", certs.server_key, None), "--ssl-certfile .*no.pem: no such file"),
        ((certs.server_cert, certs.client_key, None), "cannot be used"),  # not its key
    ]
    for args, message in cases:
        with pytest.raises(TlsError, match=message):
            tls_files(*args)


@pytest.mark.parametrize(
    "command",
    [["twin", "serve", "--dev"], ["ui"], ["scheduler", "serve", "--insecure-local"]],
    ids=["twin", "explorer", "scheduler"],
)
def test_every_service_command_refuses_a_bad_tls_option(command: list[str], tmp_path: Path) -> None:
    args = [*command, "--ssl-certfile", str(tmp_path / "missing.pem"), "--ssl-keyfile",
            str(tmp_path / "missing.key"), "--db", f"sqlite:///{tmp_path / 's.db'}"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "--ssl-certfile" in result.output and "no such file" in result.output


def test_agent_command_refuses_a_bad_tls_option(tmp_path: Path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text("")
    result = CliRunner().invoke(app, ["agent", "run", str(agents), "--ssl-keyfile", "k.pem"])
    assert result.exit_code == 2 and "--ssl-keyfile needs --ssl-certfile" in result.output


def test_mutual_tls_refuses_a_client_without_a_certificate(certs: Certs, tmp_path: Path) -> None:
    from twinsched.explorer.app import create_app

    files = TlsFiles(certs.server_cert, certs.server_key, certs.ca)
    trusting = ssl.create_default_context(cafile=certs.ca)
    with serving(create_app(f"sqlite:///{tmp_path / 's.db'}"), files) as base:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{base}/healthz", verify=trusting, timeout=10)  # no client certificate
        with pytest.raises(httpx.TransportError):
            httpx.get(base.replace("https", "http") + "/healthz", timeout=10)  # in clear
        trusting.load_cert_chain(certs.client_cert, certs.client_key)
        assert httpx.get(f"{base}/openapi.json", verify=trusting, timeout=10).status_code == 200


def test_broker_tls_urls_and_client_options(certs: Certs) -> None:
    nats, amqps = parse_broker_url("tls://127.0.0.1"), parse_broker_url("amqps://u:p@h/S")
    assert (nats.tls, nats.backend, nats.port) == (True, "nats", 4222)
    assert (amqps.tls, amqps.backend, amqps.port) == (True, "amqp", 5671)
    assert not parse_broker_url("nats://h").tls
    context = client_context({CA_ENV: str(certs.ca), CERT_ENV: str(certs.client_cert),
                              KEY_ENV: str(certs.client_key)})  # fmt: skip
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 1
    with pytest.raises(BrokerConfigError, match=f"{CERT_ENV} and {KEY_ENV} go together"):
        client_context({CERT_ENV: str(certs.client_cert)})
    with pytest.raises(BrokerConfigError, match=f"{CA_ENV}=/nowhere.pem: cannot be loaded"):
        client_context({CA_ENV: "/nowhere.pem"})


def test_a_broker_without_tls_is_refused_clearly() -> None:
    """The local NATS (4222) does not require TLS, the local RabbitMQ has no TLS listener."""
    from twinsched.twin.broker.transport import connect

    with pytest.raises(BrokerError, match=r"does not require TLS.*tls:// needs a NATS server"):
        connect(parse_broker_url("tls://127.0.0.1:4222"))
    with pytest.raises(BrokerError, match="amqps:// needs a RabbitMQ TLS listener"):
        connect(parse_broker_url("amqps://guest:guest@127.0.0.1:5671"))
