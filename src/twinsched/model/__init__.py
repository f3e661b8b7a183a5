"""State: pydantic I/O models and JSON schemas at the edges, arrays in the hot path."""
