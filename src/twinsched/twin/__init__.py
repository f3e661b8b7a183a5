"""The digital twin service: the cluster's current state, its history, and an HTTP API.

``core`` is the pure core (``core.service.TwinService``, one door for changes: ``apply``);
``api`` wraps it in FastAPI (``api.app.create_app``); the history is kept by
``twinsched.store.history``; ``client.TwinClient`` talks to a running service; ``cli`` is
``twinsched twin serve|compact``. FastAPI, uvicorn and httpx come with ``twinsched[twin]``.
"""

from twinsched.extras import install_hint

WHY = "the twin service needs FastAPI, uvicorn and httpx"
EXTRA_HINT = install_hint(WHY, "twin")
