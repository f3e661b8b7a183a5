"""The twin's HTTP layer over :mod:`twinsched.twin.core`: the FastAPI app (``app.create_app``),
shared dependencies (``deps``), one router per resource (``routes``), request and response
models (``schemas``), JSON problem responses (``problems``), ASGI middleware and the
Prometheus ``/metrics`` exposition (``metrics``).
"""
