"""The twin history's message key: a broker message is recorded once, with its patch."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from twinsched.store.history import DuplicateMessageError, HistoryStore, MessageId, SampleBatch
from twinsched.store.history.tables import changes, samples


def test_a_message_recorded_twice_writes_nothing_the_second_time(db: str) -> None:
    store = HistoryStore(db)
    batch = SampleBatch()
    batch.add(1.0, "n1", {"u": 0.5})
    store.record_patch(1, 1.0, b"{}", batch, MessageId("pub/n1", 1))
    with pytest.raises(DuplicateMessageError, match="pub/n1#1 was already applied"):
        store.record_patch(2, 1.0, b"{}", batch, MessageId("pub/n1", 1))
    store.record_patch(3, 2.0, b"{}", batch, MessageId("pub/n1", 2))
    store.record_patch(4, 2.0, b"{}", batch)  # HTTP patches carry no id
    with store.engine.connect() as conn:
        versions = conn.execute(sa.select(changes.c.version)).scalars().all()
        count = conn.execute(sa.select(sa.func.count()).select_from(samples)).scalar()
    assert sorted(versions) == [1, 3, 4] and count == 3
    assert store.applied_messages() == {"pub/n1": 2}
