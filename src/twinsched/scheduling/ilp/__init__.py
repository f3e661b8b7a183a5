"""ILP schedulers: a window of pending pods placed jointly with OR-Tools CP-SAT.

``problem.py`` gathers the data, ``model.py`` builds and solves the model in fixed sections,
``targets.py`` holds the objectives, ``scheduler.py`` is the registered scheduler.
"""
