"""Broker URLs: ``nats://`` or ``amqp://[user:password@]host[:port][/STREAM]``, checked
before connecting; ``tls://`` and ``amqps://`` are the same over TLS (``broker/tls.py``).

The scheme picks the backend: NATS JetStream (port 4222) or RabbitMQ over AMQP 0-9-1 (port
5672, virtual host ``/``). The stream (default ``TWINSCHED``) names the JetStream stream, or
the RabbitMQ exchange and queue; subjects (routing keys) start with the stream's name in lower
case (``twinsched.samples.<node>``, ``twinsched.deltas.<source>``), so two streams on one
server never share a message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from twinsched.errors import TwinschedError

DEFAULT_PORTS = {"nats": 4222, "amqp": 5672, "tls": 4222, "amqps": 5671}
DEFAULT_PORT = DEFAULT_PORTS["nats"]
DEFAULT_STREAM = "TWINSCHED"
STREAM_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
SCHEMES = tuple(DEFAULT_PORTS)
FORM = (
    "nats://host[:port][/STREAM] or amqp://[user:password@]host[:port][/STREAM] "
    "(tls:// and amqps:// over TLS)"
)


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
    scheme: str = "nats"

    @property
    def server(self) -> str:
        """The server address for the client, credentials included."""
        auth = f"{self.user}:{self.password or ''}@" if self.user is not None else ""
        return f"{self.scheme}://{auth}{self.host}:{self.port}"

    @property
    def tls(self) -> bool:
        """Whether the link must be TLS (``tls://``, ``amqps://``)."""
        return self.scheme in ("tls", "amqps")

    @property
    def backend(self) -> str:
        """``nats`` or ``amqp``, whichever the scheme names, with or without TLS."""
        return "amqp" if self.scheme in ("amqp", "amqps") else "nats"

    @property
    def prefix(self) -> str:
        """The first token of every subject of this stream."""
        return self.stream.lower()

    def __str__(self) -> str:
        """The URL without its password (for messages and logs)."""
        user = f"{self.user}@" if self.user is not None else ""
        return f"{self.scheme}://{user}{self.host}:{self.port}/{self.stream}"


def parse_broker_url(text: str) -> BrokerUrl:
    """``text`` as a :class:`BrokerUrl`, or :class:`BrokerConfigError` saying what is wrong."""
    form = FORM
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise BrokerConfigError(f"broker URL {text!r}: {exc}; expected {form}") from None
    if parts.scheme not in SCHEMES:
        got = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise BrokerConfigError(
            f"broker URL {text!r}: {got}; expected {form} (NATS JetStream or RabbitMQ)"
        )
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
    scheme = parts.scheme
    return BrokerUrl(parts.hostname, port or DEFAULT_PORTS[scheme], stream, user, password, scheme)
