"""Hostile recipe files for ``twinsched train --recipe`` and ``twinsched distil --recipe``.

:data:`TRAIN_KEYS` and :data:`DISTIL_KEYS` are the documented contract (docs/ai.md, "Recipe
files"), written here independently of ``training/recipe_file.py``: per key, TOML values
outside its range (``bad``) and inside it (``good``). :func:`recipes` draws whole files: a
valid file with some keys set, or the same file with one thing wrong (one value outside its
rule, an unknown key or section, a section that is not a table, ES together with gates, text
that is not TOML, nesting deeper than the parser recurses, a file over the size limit).
"""

from __future__ import annotations

from hypothesis import strategies as st

SEED_MAX = 2**32 - 1
TOML = st.SearchStrategy[str]
_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
_JUNK = st.sampled_from(['"x"', '""', "[]", "{}", "[1, 2]", "{ a = 1 }", "1979-05-27"])


def _int(lo: int, hi: int) -> tuple[TOML, TOML]:
    outside = st.integers(max_value=lo - 1) | st.integers(min_value=hi + 1, max_value=10**30)
    bad = outside.map(str) | st.sampled_from(["1.5", "true", "nan", '"1"']) | _JUNK
    return bad, st.integers(lo, hi).map(str)


def _float(lo: float, hi: float, open_lo: bool = False) -> tuple[TOML, TOML]:
    below = st.floats(max_value=lo, allow_nan=False, allow_infinity=False).filter(
        lambda x: x < lo or (open_lo and x <= lo)  # -0.0 is not below 0.0
    )
    above = st.floats(min_value=hi, exclude_min=True, allow_nan=False, allow_infinity=False)
    junk = st.sampled_from(["nan", "inf", "-inf", "+nan", "true", '"0.5"'])
    good = st.floats(lo, hi, exclude_min=open_lo, allow_nan=False)
    return (below | above).map(repr) | junk | _JUNK, good.map(repr)


def _array(items: TOML, least: int = 0, most: int = 4) -> TOML:
    return st.lists(items, min_size=least, max_size=most).map(lambda v: "[" + ", ".join(v) + "]")


_NAME_GOOD = _WORD.map(lambda w: f'"{w}"')
_NAME_BAD = st.sampled_from(['""', '" x"', '"x "', '"a\\u0001b"', '"' + "x" * 201 + '"', "1"])
NAME = (_NAME_BAD | st.sampled_from(["[]", "true", "{}"]), _NAME_GOOD)
SEEDS_BAD = _array(_int(0, SEED_MAX)[0], 1).filter(lambda t: t != "[]") | st.sampled_from(
    ['"0-4"', "0", "[1.5]", '["1"]', "[true]"]
)
_SEED_GOOD = st.integers(0, SEED_MAX).map(str)


def _names(least: int) -> tuple[TOML, TOML]:
    bad = _array(_NAME_BAD, 1) | st.sampled_from(['"default"', "1", "{ a = 1 }"])
    return (bad | st.just("[]")) if least else bad, _array(_NAME_GOOD, least)


def _seeds(least: int) -> tuple[TOML, TOML]:
    bad = SEEDS_BAD | st.just("[]") if least else SEEDS_BAD
    return bad, _array(_SEED_GOOD, least)


def _numbers(lo: float, hi: float) -> tuple[TOML, TOML]:
    bad_item, good_item = _float(lo, hi)
    return _array(bad_item, 1) | st.sampled_from(["[]", "1", '["1"]']), _array(good_item, 1)


FLAG = (st.sampled_from(["1", "0", '"true"', "[true]", "{}"]), st.sampled_from(["true", "false"]))
PRIOR = (
    st.one_of(
        _float(-1e6, 1e6)[0].map(lambda v: f"{{ fgd_score = {v} }}"),
        st.sampled_from(["[1]", '"fgd_score=100"', '{ "" = 1 }', '{ " x" = 1 }']),
    ),
    st.dictionaries(_WORD, _float(-1e6, 1e6)[1], max_size=3).map(
        lambda d: "{ " + ", ".join(f'"{k}" = {v}' for k, v in d.items()) + " }" if d else "{}"
    ),
)

TRAIN_KEYS: dict[str, dict[str, tuple[TOML, TOML]]] = {
    "": {"seed": _int(0, SEED_MAX), "workers": _int(0, 1024)},
    "data": {
        "trace": NAME, "train_variants": _names(1), "val_variants": _names(1),
        "val_seeds": _seeds(1), "val_on_train": FLAG,
    },
    "clone": {
        "teacher": NAME, "seeds": _seeds(1), "epochs": _int(0, 10_000),
        "patience": _int(0, 10_000), "candidates": _int(1, 4096), "prior": PRIOR,
        "teacher_ties": FLAG, "teacher_contested_only": FLAG,
    },
    "dagger": {"rounds": _int(0, 100)},
    "ppo": {"updates": _int(0, 100_000), "steps": _int(1, 10_000_000)},
    "es": {
        "generations": _int(0, 100_000), "population": _int(2, 10_000),
        "episodes": _int(1, 10_000), "sigma": _float(0, 100, open_lo=True),
        "sigma_width": _float(0, 100), "sigma_slope": _float(0, 100),
        "base_width": _float(0, 1e6, open_lo=True), "lr": _float(0, 100, open_lo=True),
        "features": (_names(0)[0].filter(lambda t: t != '"standard"'),
                     _names(0)[1] | st.just('"standard"')),
        "patience": _int(1, 100_000),
    },
    "gates": {
        "seeds": _seeds(0), "widths": _numbers(0, 1e6), "z": _float(0, 100),
        "min_variants": _int(1, 1000), "depth": _int(1, 16),
    },
    "ties": {"resolutions": _numbers(0, 1e6)},
}  # fmt: skip

DISTIL_KEYS: dict[str, dict[str, tuple[TOML, TOML]]] = {
    "": {
        "teacher": NAME, "trace": NAME, "variants": _names(1), "seeds": _seeds(1),
        "val_variants": _names(0), "val_seeds": _seeds(1),
        "hidden": (_array(_int(1, 4096)[0], 1) | st.sampled_from(["32", '"32"', "[1, 2, 3, 4, "
                   "5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]"]),
                   _array(st.integers(1, 4096).map(str), 0, 3)),
        "epochs": _int(1, 10_000), "frag_weight": _float(0, 1000), "mix": FLAG,
        "margin": _float(0, 1000), "gate_min_gain": _float(-100, 100), "seed": _int(0, SEED_MAX),
    },
}  # fmt: skip

Entries = dict[str, dict[str, str]]


def _render(sections: Entries) -> str:
    lines = [f"{k} = {v}" for k, v in sections.get("", {}).items()]
    for section, body in sections.items():
        if section:
            lines += [f"[{section}]", *(f"{k} = {v}" for k, v in body.items())]
    return "\n".join(lines) + "\n"


@st.composite
def _valid(draw: st.DrawFn, keys: dict[str, dict[str, tuple[TOML, TOML]]]) -> Entries:
    """Some keys of each section, each with a value inside its rule."""
    out: Entries = {}
    for section, rules in keys.items():
        chosen = draw(st.lists(st.sampled_from(sorted(rules)), max_size=3, unique=True))
        if chosen:
            out[section] = {k: draw(rules[k][1]) for k in chosen}
    es, gates = out.get("es", {}), out.get("gates", {})
    if es.get("generations", "0") != "0" and gates.get("seeds", "[]") != "[]":
        del gates["seeds"]  # ES with gates is refused: a valid file has one of them
    return out


def _structural(keys: dict[str, dict[str, tuple[TOML, TOML]]]) -> TOML:
    sections = [s for s in keys if s]
    section = st.sampled_from(sections or [""])
    return st.one_of(
        st.sampled_from(["[clone\n", "x = = 1\n", "= 1\n", "a = 'open\n", "\x00\n", "[[a]]\n"]),
        st.integers(100, 3000).map(lambda n: "x = " + "[" * n + "]" * n + "\n"),
        st.just("# pad\n" * 12_000),  # over 64 KiB
        _WORD.map(lambda w: f"[zz{w}]\nx = 1\n"),  # an unknown section
        st.tuples(section, _WORD).map(
            lambda t: f"[{t[0]}]\nzz{t[1]} = 1\n" if t[0] else f"zz{t[1]} = 1\n"
        ),  # an unknown key
        section.map(lambda s: f"{s} = 1\n" if s else "[x]\n"),  # a section that is no table
    )


@st.composite
def _one_bad(draw: st.DrawFn, keys: dict[str, dict[str, tuple[TOML, TOML]]]) -> str:
    entries = draw(_valid(keys))
    section = draw(st.sampled_from(sorted(keys)))
    key = draw(st.sampled_from(sorted(keys[section])))
    entries.setdefault(section, {})[key] = draw(keys[section][key][0])
    return _render(entries)


def recipes(keys: dict[str, dict[str, tuple[TOML, TOML]]]) -> tuple[TOML, TOML]:
    """(bad files, good files) for a recipe format of ``keys``."""
    bad = _one_bad(keys) | _structural(keys)
    if "es" in keys:
        both = st.integers(1, 100).map(lambda g: f"[es]\ngenerations = {g}\n[gates]\nseeds = [0]\n")
        bad = bad | both
    return bad, _valid(keys).map(_render)
