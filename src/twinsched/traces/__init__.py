"""Trace readers (one module per format) and synthetic scenario generators."""
