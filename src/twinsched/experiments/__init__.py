"""Experiments: the one runner, executors (local processes; Ray later), the offline optimum."""
