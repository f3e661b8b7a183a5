"""Applications on the twin: a versioned spec of pod templates, deployed into the twin's live
session (the controller over the twin places the pods), updated with a bounded rolling
replacement, scaled, rolled back and terminated, every change a revision in the history.

No web framework here: ``twin/api/routes/apps.py`` serves them, ``cli/apps.py`` drives them
(``docs/apps.md``).
"""
