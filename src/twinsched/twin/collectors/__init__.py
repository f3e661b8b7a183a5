"""Collectors that feed the twin from live sources (``prometheus``: a Prometheus server's API)."""
