"""Offline optimum of a whole fill-up instance: patterns, column generation, bound, decode."""
