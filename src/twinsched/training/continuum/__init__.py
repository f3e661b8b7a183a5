"""Learned schedulers for the continuum: recipes, replays as jobs, evolution strategies."""
