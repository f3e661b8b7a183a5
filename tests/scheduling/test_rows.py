from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from twinsched.scheduling.rows import distinct_rows


@given(hnp.arrays(np.int64, st.tuples(st.integers(1, 60), st.integers(1, 10)),
                  elements=st.integers(-3, 3)))  # fmt: skip
def test_distinct_rows_are_exactly_numpys(rows: np.ndarray) -> None:
    distinct, inverse = distinct_rows(rows)
    assert np.array_equal(distinct[inverse], rows)
    assert len(distinct) == len(np.unique(rows, axis=0))
