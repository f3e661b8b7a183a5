"""The twin's core, free of any web framework: the state holder and its one door for changes
(``service.TwinService``), the delta batches it applies (``deltas``), typed read-only views
(``views``) and the service's settings (``settings``). Nothing here imports ``twin.api``,
FastAPI or Starlette; the history it writes lives in ``twinsched.store.history``.
"""
