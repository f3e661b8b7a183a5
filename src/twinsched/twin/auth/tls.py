"""TLS for every service through the same three options (the scheduler service's names):
``--ssl-certfile`` and ``--ssl-keyfile`` serve HTTPS, ``--ssl-ca-certs`` also requires a
client certificate signed by that CA (mutual TLS). The files are checked before serving, so
a missing or unreadable one is one error naming the option, not a traceback in uvicorn.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twinsched.errors import TwinschedError


class TlsError(TwinschedError):
    """A TLS option is missing its partner or names a file that cannot be used."""


@dataclass(frozen=True)
class TlsFiles:
    """The certificate and key a service presents, and the CA its clients' certificates
    must chain to (None: no client certificate asked for)."""

    certfile: Path
    keyfile: Path
    ca_certs: Path | None = None

    def context(self) -> ssl.SSLContext:
        """A server context (TLS 1.2 or newer) for the standard library's servers."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.certfile, self.keyfile)
        if self.ca_certs is not None:
            context.load_verify_locations(self.ca_certs)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def uvicorn(self) -> dict[str, Any]:
        """uvicorn's keyword arguments for the same settings."""
        kwargs: dict[str, Any] = {"ssl_certfile": str(self.certfile),
                                  "ssl_keyfile": str(self.keyfile)}  # fmt: skip
        if self.ca_certs is not None:
            kwargs |= {"ssl_ca_certs": str(self.ca_certs), "ssl_cert_reqs": ssl.CERT_REQUIRED}
        return kwargs


def tls_files(
    certfile: Path | None, keyfile: Path | None, ca_certs: Path | None
) -> TlsFiles | None:
    """The checked TLS settings (None: plain HTTP); each file must load, the key must match
    the certificate, and ``--ssl-ca-certs`` needs a certificate to serve."""
    if certfile is None:
        if keyfile is not None or ca_certs is not None:
            given = "--ssl-keyfile" if keyfile is not None else "--ssl-ca-certs"
            raise TlsError(f"{given} needs --ssl-certfile (the service's certificate)")
        return None
    if keyfile is None:
        raise TlsError("--ssl-certfile needs --ssl-keyfile (the certificate's private key)")
    files = TlsFiles(certfile, keyfile, ca_certs)
    for option, path in (("--ssl-certfile", certfile), ("--ssl-keyfile", keyfile),
                         ("--ssl-ca-certs", ca_certs)):  # fmt: skip
        if path is not None and not path.is_file():
            raise TlsError(f"{option} {path}: no such file")
    try:
        files.context()
    except (ssl.SSLError, OSError) as exc:
        raise TlsError(f"--ssl-certfile/--ssl-keyfile/--ssl-ca-certs: cannot be used: "
                       f"{exc.__class__.__name__}: {exc}") from None  # fmt: skip
    return files
