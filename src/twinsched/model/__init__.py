"""State: pydantic I/O models and JSON schemas at the edges, struct-of-arrays state in the hot path."""
