"""Training of placement policies: teacher data, cloning and DAgger, PPO, evolution
strategies, tie gates, and the recipe that runs them in order (``twinsched train``).

The trained :class:`~twinsched.scheduling.ai.policy.Policy` is served by
:mod:`twinsched.scheduling.ai`, which never imports this package.
"""
