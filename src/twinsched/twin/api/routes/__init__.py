"""One router per resource: state, views, history, operations (metrics, health)."""
