"""Certificates made by the tests themselves with the ``openssl`` CLI (``cryptography`` is
not installed): a CA, a server certificate for 127.0.0.1 and localhost, a client one."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


def make_certs(folder: Path) -> Certs:
    """A throwaway CA (one day) and the two certificates it signs."""
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1",
             "-subj", "/CN=twinsched test CA")  # fmt: skip
    made = {}
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                      ("client", "extendedKeyUsage=clientAuth")):  # fmt: skip
        key, csr, cert = (folder / f"{name}.{e}" for e in ("key", "csr", "pem"))
        _openssl("req", *ec, "-keyout", key, "-out", csr, "-subj", f"/CN=twinsched {name}")
        extfile = folder / f"{name}.ext"
        extfile.write_text(ext + "\n")
        _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                 "-out", cert, "-days", "1", "-extfile", extfile)  # fmt: skip
        made[name] = (cert, key)
    return Certs(ca, *made["server"], *made["client"])
