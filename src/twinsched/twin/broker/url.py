"""Broker URLs: ``nats://[user:password@]host[:port][/STREAM]``, checked before connecting.

The stream (default ``TWINSCHED``) names the JetStream stream; its subjects start with the
stream's name in lower case (``twinsched.samples.<node>``, ``twinsched.deltas.<source>``), so
two streams on one server never share a message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from twinsched.errors import TwinschedError

DEFAULT_PORT = 4222
DEFAULT_STREAM = "TWINSCHED"
STREAM_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
SCHEMES = ("nats",)


class BrokerConfigError(TwinschedError):
    """A broker URL or setting is invalid; the message names the part and the accepted form."""


@dataclass(frozen=True)
class BrokerUrl:
    """A parsed broker URL."""

    host: str
    port: int = DEFAULT_PORT
    stream: str = DEFAULT_STREAM
    user: str | None = None
    password: str | None = None

    @property
    def server(self) -> str:
        """The server address for the client, credentials included."""
        auth = f"{self.user}:{self.password or ''}@" if self.user is not None else ""
        return f"nats://{auth}{self.host}:{self.port}"

    @property
    def prefix(self) -> str:
        """The first token of every subject of this stream."""
        return self.stream.lower()

    def __str__(self) -> str:
        """The URL without its password (for messages and logs)."""
        user = f"{self.user}@" if self.user is not None else ""
        return f"nats://{user}{self.host}:{self.port}/{self.stream}"


def parse_broker_url(text: str) -> BrokerUrl:
    """``text`` as a :class:`BrokerUrl`, or :class:`BrokerConfigError` saying what is wrong."""
    form = "nats://host[:port][/STREAM]"
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise BrokerConfigError(f"broker URL {text!r}: {exc}; expected {form}") from None
    if parts.scheme not in SCHEMES:
        got = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise BrokerConfigError(f"broker URL {text!r}: {got}; expected {form} (NATS JetStream)")
    if not parts.hostname:
        raise BrokerConfigError(f"broker URL {text!r}: no host; expected {form}")
    if port is not None and not 1 <= port <= 65535:
        raise BrokerConfigError(f"broker URL {text!r}: port {port} is not in 1-65535")
    if parts.query or parts.fragment:
        raise BrokerConfigError(f"broker URL {text!r}: no query or fragment; expected {form}")
    stream = parts.path.strip("/") or DEFAULT_STREAM
    if not STREAM_PATTERN.fullmatch(stream):
        raise BrokerConfigError(
            f"broker URL {text!r}: stream {stream!r} must be 1-64 letters, digits, '_' or '-'"
        )
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return BrokerUrl(parts.hostname, port or DEFAULT_PORT, stream, user, password)
