"""TLS for the broker links: ``tls://`` (NATS) and ``amqps://`` (RabbitMQ).

The client's TLS settings come from the environment, the same for every command that talks
to a broker: ``TWINSCHED_BROKER_TLS_CA`` (the CA the server's certificate must chain to;
default: the system's), ``TWINSCHED_BROKER_TLS_CERT`` and ``TWINSCHED_BROKER_TLS_KEY`` (a
client certificate, for servers that verify clients). A NATS server that does not require
TLS is refused before anything is sent (the NATS client would otherwise go on in clear).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

from twinsched.twin.broker.url import BrokerConfigError

CA_ENV = "TWINSCHED_BROKER_TLS_CA"
CERT_ENV = "TWINSCHED_BROKER_TLS_CERT"
KEY_ENV = "TWINSCHED_BROKER_TLS_KEY"


def client_context(environ: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """The broker client's TLS context (server certificate and host name verified)."""
    env = os.environ if environ is None else environ
    ca, cert, key = (env.get(name) or None for name in (CA_ENV, CERT_ENV, KEY_ENV))
    if (cert is None) != (key is None):
        raise BrokerConfigError(f"{CERT_ENV} and {KEY_ENV} go together (a client certificate "
                                "and its key)")  # fmt: skip
    try:
        context = ssl.create_default_context(cafile=ca)
    except (OSError, ssl.SSLError) as exc:
        raise BrokerConfigError(f"{CA_ENV}={ca}: cannot be loaded: {exc}") from None
    if cert is not None:
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise BrokerConfigError(
                f"{CERT_ENV}={cert}, {KEY_ENV}={key}: cannot be loaded: {exc}"
            ) from None
    return context
