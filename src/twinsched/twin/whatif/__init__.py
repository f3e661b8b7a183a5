"""What-if: fork the twin's current state into the simulator and compare schedulers on it.

:mod:`.request` checks a request (schedulers by the registry, horizon, seeds, bounds);
:mod:`.fork` turns the twin's document into a fork (nodes with status, running pods with their
remaining time, pending pods, the recent arrivals to sample from); :mod:`.workload` draws the
horizon's arrivals; :mod:`.runs` replays one (scheduler, seed) on the fork with the
simulator's :class:`~twinsched.sim.replay.ReplayRun`; :mod:`.compare` runs them all and gives
each figure's spread over seeds; :mod:`.jobs` runs requests in the background, with progress,
a time limit and a cache per (state version, request). No web framework here.
"""
