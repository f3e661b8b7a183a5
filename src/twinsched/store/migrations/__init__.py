"""Alembic environment and revisions of the scenario store (see ``twinsched.store.migrate``)."""
