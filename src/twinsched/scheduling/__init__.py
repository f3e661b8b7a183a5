"""Scheduling framework: extension points, registry, controller (queue, filter, fan-out)."""
