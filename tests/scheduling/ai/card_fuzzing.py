"""Malformed model cards: one bad ``card.json`` must give a clear error and hide no other model.

A registry holds a good model and a victim; Hypothesis rewrites the victim's ``card.json``
(random bytes, truncated JSON, a field dropped, a field's value replaced by any JSON value,
unknown fields added, deep nesting, non-UTF-8 text). Then :meth:`ModelRegistry.scan` and
``twinsched models list`` must either refuse the card with a :class:`CardError` naming its
file ("clear error"), or read it with every field of its documented type ("accepted"). A card
read with a wrong type is "stored wrongly"; any other exception, a traceback in the CLI's
output or the good model missing from the list is a "traceback" (a crash or a lost model).
Shared by ``tests/scheduling/ai/test_card_fuzz.py`` (small budget) and
``bench/fuzz_cards.py`` (the row in ``docs/reliability.md``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests import fuzz_table
from tests.cli_runner import invoke
from twinsched.scheduling.ai.model_store import _TEXT_MAPS, _TYPES, CARD, CardError, ModelRegistry

DATA = hashlib.sha256(b"data").hexdigest()

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def corrupt_cards(draw: st.DrawFn, card: dict[str, Any]) -> bytes:
    """A rewrite of a valid card's ``card.json``: bytes, as written to disk."""
    text = json.dumps(card)
    how = draw(st.sampled_from(["bytes", "cut", "drop", "replace", "extra", "deep", "latin1"]))
    if how == "bytes":
        return draw(st.binary(max_size=300))
    if how == "cut":
        return text[: draw(st.integers(0, len(text) - 1))].encode()
    if how == "deep":
        depth = draw(st.integers(100, 200_000))
        return ('{"spec": ' + "[" * depth + "]" * depth + "}").encode()
    if how == "latin1":
        return text.replace('"k"', '"k\xe9\xff"').encode("latin-1")
    out = dict(card)
    if how == "drop":
        out.pop(draw(st.sampled_from(sorted(card))))
    elif how == "replace":
        out[draw(st.sampled_from(sorted(card)))] = draw(json_values)
    else:
        out |= draw(st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=3))
    return json.dumps(out).encode()


Tally = fuzz_table.Tally


def registry_with_victim(root: Path) -> tuple[ModelRegistry, Path, dict[str, Any]]:
    """A fresh registry under ``root``: ``good@1`` and ``victim@1``; the victim's card path."""
    shutil.rmtree(root, ignore_errors=True)
    registry = ModelRegistry(root)
    registry.register("good", "k", {"f": b"1"}, {}, DATA, {"alloc_pct": 91.0})
    card = registry.register("victim", "k", {"f": b"2"}, {}, DATA)
    path = card.path / CARD
    return registry, path, json.loads(path.read_text())


def well_typed(raw: dict[str, Any]) -> bool:
    """Every documented field of the documented type (what a reader may rely on)."""
    for key, kind in _TYPES.items():
        if not isinstance(raw.get(key), kind) or isinstance(raw.get(key), bool):
            return False
    return all(all(isinstance(v, str) for v in raw[k].values()) for k in _TEXT_MAPS)


def check(data: bytes, root: Path, tally: Tally) -> None:
    """Write ``data`` as the victim's card, scan and list; count how it ended."""
    registry, path, _ = registry_with_victim(root)
    path.write_bytes(data)
    tally.tried += 1
    try:
        cards, bad = registry.scan()
    except Exception as exc:
        tally.tracebacks += 1
        tally.failed(f"scan raised {exc!r:.120} for {data[:60]!r}")
        return
    listed = invoke(["models", "list", "--models-dir", str(root)], env={"COLUMNS": "200"})
    crashed = listed.exception is not None and not isinstance(listed.exception, SystemExit)
    if crashed or "Traceback" in listed.output or "good" not in listed.output:
        tally.tracebacks += 1
        tally.failed(f"models list: {listed.exception!r:.120} {listed.output[-200:]!r}")
        return
    if [c.name for c in cards if c.name == "good"] != ["good"]:
        tally.tracebacks += 1
        tally.failed(f"the good model is hidden by {data[:60]!r}")
        return
    victim = [c for c in cards if c.name == "victim"]
    if victim:
        if well_typed({key: getattr(victim[0], key) for key in _TYPES}):
            tally.accepted += 1
        else:
            tally.wrongly += 1
            tally.failed(f"read with a wrong type: {data[:120]!r}")
        return
    if len(bad) == 1 and isinstance(bad[0], CardError) and str(path) in str(bad[0]):
        tally.clear += 1
    else:
        tally.wrongly += 1
        tally.failed(f"refused without naming the file: {bad!r:.200}")
