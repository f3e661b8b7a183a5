"""Scheduling framework: extension-point protocols, registry, controller (queue, filter, fan-out)."""
