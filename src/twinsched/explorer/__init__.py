"""The run explorer: ``twinsched ui``, a read-only web page over the scenario store's runs.

``views.py`` turns stored runs into rows, filters and comparisons (pure); ``app.py`` is the
FastAPI app (JSON under ``/api``, the page at ``/``, offline Swagger UI at ``/docs``).
"""
