"""The digital twin service: the cluster's current state, its history, and an HTTP API.

``service.TwinService`` is the pure core (one door for changes: ``apply``); ``app.create_app``
wraps it in FastAPI; ``client.TwinClient`` talks to a running service; ``cli`` is
``twinsched twin serve|compact``. FastAPI, uvicorn and httpx come with ``twinsched[twin]``.
"""

EXTRA_HINT = "the twin service needs FastAPI, uvicorn and httpx: pip install 'twinsched[twin]'"
