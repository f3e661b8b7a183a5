"""Tokens: a role and a set of namespaces, stored hashed, compared in constant time.

A token reads ``tws_<id>_<secret>``: the id (12 hex digits) finds its row, the secret (43
URL-safe characters, 256 bits) is checked against the row's salted scrypt hash with
``hmac.compare_digest``. The store never holds a secret, and no message, log line or error
body shows one (``tests/security/test_leaks.py``). The legacy single token of a service
(``TWINSCHED_TWIN_TOKEN``, the scheduler service's ``--token``) is an admin token of every
namespace. A verified token is remembered for ``cache_s`` seconds (by its SHA-256), so a
revocation takes effect within that time and scrypt runs once per token and period.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from twinsched.errors import TwinschedError
from twinsched.model.access import StoredToken

if TYPE_CHECKING:  # the store (its extra) only where tokens are kept in a database
    from twinsched.store.history.access import TokenStore

PREFIX = "tws"
ALL_NAMESPACES = "*"
DEFAULT_NAMESPACE = "default"
NAMESPACE_PATTERN = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS-1123 label
_TOKEN = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})$")
SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}  # 16 MiB a hash; once per token per cache_s
CACHE_S = 5.0


class AuthError(TwinschedError):
    """A role, namespace or token name out of range (the message names the field)."""


class Role(StrEnum):
    """What a token may do: read < write < admin (each includes the ones before)."""

    read = "read"
    write = "write"
    admin = "admin"

    @property
    def rank(self) -> int:
        return ("read", "write", "admin").index(self.value) + 1


@dataclass(frozen=True)
class Principal:
    """Who a request is: the token's name and id, its role and namespaces (``*``: all)."""

    name: str
    role: Role
    namespaces: frozenset[str]
    token_id: str

    def may(self, role: Role) -> bool:
        """Whether this principal's role includes ``role``."""
        return self.role.rank >= role.rank

    def sees(self, namespace: str | None) -> bool:
        """Whether ``namespace`` is one of this principal's (None: the whole cluster)."""
        if ALL_NAMESPACES in self.namespaces:
            return True
        return namespace is not None and namespace in self.namespaces


def check_namespace(name: str, field: str = "namespace") -> str:
    """``name`` when it is a namespace (a DNS-1123 label, 1-63 characters) or ``*``."""
    if name == ALL_NAMESPACES or NAMESPACE_PATTERN.match(name):
        return name
    raise AuthError(f"{field}: {name[:80]!r} is not a namespace (lowercase letters, digits and "
                    "'-', 1-63 characters, starting and ending alphanumeric) nor '*'")  # fmt: skip


def parse_role(value: str) -> Role:
    """The role named ``value``; an unknown one lists the known ones."""
    try:
        return Role(value)
    except ValueError:
        raise AuthError(f"role: {value[:40]!r} is not one of read, write, admin") from None


def hash_secret(secret: str, salt: bytes) -> str:
    """The scrypt hash of ``secret`` with ``salt``, as hex."""
    return hashlib.scrypt(secret.encode(), salt=salt, **SCRYPT).hex()


def new_token(
    name: str, role: Role, namespaces: Iterable[str], created_by: str
) -> tuple[str, StoredToken]:
    """A fresh token (shown once) and its row to store (salt and hash only)."""
    if not 1 <= len(name) <= 128 or not name.isprintable():
        raise AuthError(f"name: {name[:40]!r} must be 1-128 printable characters")
    spaces = tuple(sorted({check_namespace(n) for n in namespaces}))
    if not spaces:
        raise AuthError("namespaces: give at least one namespace, or '*' for all")
    token_id, secret, salt = (
        secrets.token_hex(6),
        secrets.token_urlsafe(32),
        secrets.token_bytes(16),
    )
    row = StoredToken(id=token_id, name=name, role=role.value, namespaces=spaces,
                      salt=salt.hex(), hash=hash_secret(secret, salt), created=time.time(),
                      created_by=created_by)  # fmt: skip
    return f"{PREFIX}_{token_id}_{secret}", row


class TokenVerifier:
    """Who a bearer token is: a legacy token (admin of every namespace) or an issued one."""

    def __init__(
        self, legacy: Iterable[str] = (), store: TokenStore | None = None, cache_s: float = CACHE_S
    ) -> None:
        self.legacy = [t.encode() for t in legacy if t]
        self.store = store
        self.cache_s = cache_s
        self._cache: dict[bytes, tuple[Principal | None, float]] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether any token can be valid (else the service runs open, a dev bench)."""
        return bool(self.legacy) or self.store is not None

    def cached(self, token: str) -> tuple[bool, Principal | None]:
        """``(True, principal or None)`` if ``token`` was verified (or refused) less than
        ``cache_s`` ago, else ``(False, None)``: no hashing, no database, what the event
        loop may call. Refusals are remembered too, so a flood of one wrong token costs one
        scrypt per period, not one per request."""
        key = hashlib.sha256(token.encode()).digest()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[1] < self.cache_s:
            return True, hit[0]
        return False, None

    def verify(self, token: str) -> Principal | None:
        """The principal of ``token``, or None when it is unknown, wrong or revoked."""
        known, principal = self.cached(token)
        if known:
            return principal
        principal = self._verify(token)
        key = hashlib.sha256(token.encode()).digest()
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (principal, time.monotonic())
        return principal

    def _verify(self, token: str) -> Principal | None:
        given = token.encode()
        if any(hmac.compare_digest(given, legacy) for legacy in self.legacy):
            return Principal("legacy token", Role.admin, frozenset({ALL_NAMESPACES}), "legacy")
        match = _TOKEN.match(token)
        if match is None or self.store is None:
            return None
        row = self.store.find(match.group(1))
        salt = bytes.fromhex(row.salt) if row is not None else b"\0" * 16
        computed = hash_secret(match.group(2), salt)  # also for an unknown id: same time
        if row is None or row.revoked is not None:
            return None
        if not hmac.compare_digest(computed.encode(), row.hash.encode()):
            return None
        return Principal(row.name, Role(row.role), frozenset(row.namespaces), row.id)
