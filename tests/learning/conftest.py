"""Learning-plane fixtures: ``twin``, a real twin process on loopback (as in the twin tests)."""

from tests.twin.test_loop import twin  # noqa: F401  (a module-scoped fixture, re-exported)
