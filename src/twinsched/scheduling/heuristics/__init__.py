"""Built-in heuristic schedulers, one module per policy family.

``twinsched.scheduling.registry`` names them in its in-tree table.
"""
