"""A throwaway JetStream stream on the NATS server of the tests (127.0.0.1:4222).

``fresh_stream()`` gives a broker URL with a stream name of its own; ``delete_stream(url)``
removes it (and its messages) afterwards. ``$TWINSCHED_TEST_NATS`` points elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

import nats

NATS = os.environ.get("TWINSCHED_TEST_NATS", "nats://127.0.0.1:4222")


def fresh_stream() -> str:
    """A broker URL whose stream no test has used."""
    return f"{NATS}/T{uuid.uuid4().hex[:12]}"


def delete_stream(url: str) -> None:
    """Delete the stream of ``url`` (nothing when it does not exist)."""
    server, stream = url.rsplit("/", 1)

    async def delete() -> None:
        nc = await nats.connect(server)
        with contextlib.suppress(Exception):
            await nc.jetstream().delete_stream(stream)
        await nc.close()

    asyncio.run(delete())
