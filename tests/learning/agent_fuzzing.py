"""Hostile agent files for ``twinsched agent check`` and ``agent run``, drawn by Hypothesis.

A file starts from a valid one (two agents: a forecast rule and a target-tracking rule with
a cron trigger) and gets one to three mutations: an option set to a hostile value (tiny,
huge, infinite or NaN numbers, 3,000-character strings, control characters, nested lists),
a cron expression that may never fire (31 February), a URL with a space or a newline, an
option removed or an unknown one added, or raw text: nesting thousands of levels deep, a
file over the size limit, bytes that are not UTF-8. Some mutations keep the file valid
(brackets inside strings, the lowest and highest accepted values).

Each file goes through ``agent check``, then ``agent run --duration`` (the twin's URL is a
closed port on loopback, so every firing fails fast and is counted), both in process with a
time limit. Counted: clean errors (exit 2 and a message), accepted (check exit 0 and run
exit 0 after its duration), tracebacks, hangs (past the limit) and disagreements (check
accepts and run refuses, or the reverse, or they refuse with different messages). Shared by
``tests/learning/test_fuzz_agents.py`` (small budget) and ``bench/fuzz_agents.py``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.cli.fuzzing import Slow, time_limit
from tests.fuzz_table import Tally
from twinsched.cli import app

RUN_S = 0.3  # how long ``agent run`` runs an accepted file
LIMIT_S = 10.0  # past this, a command hangs
CLOSED = "http://127.0.0.1:9"  # discard port: nothing listens there, a connection is refused
ENV = {"TWINSCHED_TWIN_TOKEN": "fuzz-token-0123456789", "COLUMNS": "400"}

BASE: dict[str, Any] = {
    "twin": {"url": CLOSED, "timeout_s": 2.0},
    "agents": [
        {
            "name": "edge",
            "trigger": {"every_s": 0.2},
            "service": {"nodepool": "edge"},
            "sensor": {"kind": "twin", "window_s": 60.0},
            "rule": {"kind": "forecast", "forecaster": "seasonal-naive", "step_s": 60.0,
                     "lookback_s": 3600.0, "horizon_steps": 5, "day_steps": 10,
                     "per_instance": 40.0, "max_replicas": 8,
                     "placement": {"node_selector": {"zone": "b"}, "tier": "edge"}},
            "actuator": {"kind": "twin"},
        },
        {
            "name": "cloud",
            "trigger": {"every_s": 600.0, "cron": "0 8 * * mon-fri"},
            "service": {"selector": {"app": "web"}},
            "rule": {"kind": "target-tracking", "key": "load", "per_instance": 100.0},
        },
        {
            "name": "pin",
            "trigger": {"every_s": 0.2},
            "service": {"nodepool": "edge"},
            "rule": {"kind": "placement", "replicas": 2,
                     "placement": {"nodepool": "edge", "node_selector": {"k8s.io/zone": "a"}}},
        },
    ],
}  # fmt: skip
OPTIONS = {  # options each section may have, besides those of BASE
    "twin": ["url", "token_env", "timeout_s"],
    "trigger": ["every_s", "start", "cron"],
    "service": ["nodepool", "selector"],
    "sensor": ["kind", "window_s", "reads"],
    "rule": ["kind", "key", "per_instance", "min_replicas", "max_replicas", "forecaster", "seed",
             "metric", "step_s", "lookback_s", "horizon_steps", "day_steps", "week_steps",
             "replicas", "placement"],
    "placement": ["node_selector", "tier", "nodepool"],  # rule.placement
    "actuator": ["kind", "deployment", "namespace", "max_replicas", "max_step", "min_interval_s"],
}  # fmt: skip

NUMBERS = st.one_of(
    st.sampled_from([0, -1, 1e-9, 0.0999, 0.1, 1, 1e9, 1e308, -0.0, 2**63, 2**64, 4102444801]),
    st.sampled_from([math.inf, -math.inf, math.nan, 10**40, -(10**40), 604800.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
)
STRINGS = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(categories=["Cc", "Cf", "Zs", "Zl"]), min_size=1, max_size=8),
    st.integers(250, 3000).map(lambda n: "x" * n),
    st.sampled_from(["", " ", "a\nb", "\x00", "[[[[[[[[[[[[", "{{{{{{{{{{", "é", "stored:nope"]),
)
CRONS = st.one_of(
    st.tuples(
        *(
            st.sampled_from(parts)
            for parts in (
                ["0", "*/15", "59", "60", "*/0", "5-1", "1,2", "x"],
                ["*", "8", "23", "24", "9-17"],
                ["*", "1", "29", "30", "31", "32", "0", "²"],
                ["*", "2", "4", "feb", "12", "13"],
                ["*", "mon-fri", "7", "8", "sun"],
            )
        )
    ).map(" ".join),
    st.sampled_from(["@yearly", "@daily", "@never", "* * * *", "0 0 31 2 *", "0 0 30 2 *"]),
)
URLS = st.one_of(
    st.sampled_from([
        "http://127.0.0.1:9\n", "http://127.0.0.1:9/ x", "ftp://127.0.0.1:9", "http://",
        "http://127.0.0.1:99999", "http://127.0.0.1:0", "http://u:p@127.0.0.1:9",
        "http://127.0.0.1:9/?q=1", "127.0.0.1:9", "http://127.0.0.1:9#x", "http://[::1",
        "http://127.0.0.1:9/" + "a" * 3000, "http://exämple:9", "http://\x7f:9",
    ]),
    st.sampled_from(["http://127.0.0.1:9/", "https://127.0.0.1:9", "http://localhost:9",
                     "http://[::1]:9", "http://127.0.0.1:9/twin/"]),  # valid: closed ports
)  # fmt: skip
LABEL_TEXT = st.one_of(  # label keys and values at and past the grammar's edges
    st.sampled_from(["a", "a" * 63, "a" * 64, "-a", "a-", "a_b.c", "é", "a b", "a\n", "",
                     "x.io/a", "X.io/a", "/a", "x.io/", "a/b/c", "a" * 254 + "/b", "tier"]),
    STRINGS,
)  # fmt: skip
LABELS = st.one_of(  # node selectors, tiers and nodepools
    st.dictionaries(LABEL_TEXT, LABEL_TEXT, max_size=4),
    st.integers(30, 40).map(lambda n: {f"k{i}": "v" for i in range(n)}),  # past 32 labels
    LABEL_TEXT,
)
HOSTILE = st.one_of(
    NUMBERS,
    STRINGS,
    st.booleans(),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(0, 3), max_size=3),
)


@dataclass
class AgentTally(Tally):
    """The table's counts, and commands past the time limit and check/run disagreements."""

    hangs: int = 0
    disagree: int = 0

    def row(self, target: str) -> str:
        cells = (self.tried, self.clear, self.accepted, self.tracebacks, self.hangs,
                 self.disagree)  # fmt: skip
        return f"| {target} | " + " | ".join(map(str, cells)) + " |"


HEADER = [
    "| target | tried | clean errors | accepted | tracebacks | hangs | check ≠ run |",
    "|---|---:|---:|---:|---:|---:|---:|",
]


def toml(value: Any) -> str:
    """``value`` in TOML (inline tables and arrays; strings with every control escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else {math.inf: "inf", -math.inf: "-inf"}.get(value, repr(value))
        )
    if isinstance(value, str):
        return json.dumps(value).replace("\x7f", "\\u007f")  # JSON escapes TOML reads
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {toml(v)}" for k, v in value.items()) + "}"


def document(data: dict[str, Any]) -> str:
    """A whole file: one ``key = value`` line per top-level key."""
    return "".join(f"{json.dumps(key)} = {toml(value)}\n" for key, value in data.items())


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """BASE with one to three options changed, removed or added."""
    data = json.loads(json.dumps(BASE))
    for _ in range(draw(st.integers(1, 3))):
        section = draw(st.sampled_from(sorted(OPTIONS)))
        agent = data["agents"][draw(st.integers(0, len(BASE["agents"]) - 1))]
        holder = data["twin"] if section == "twin" else agent
        if section == "placement":
            holder = holder["rule"] if isinstance(holder["rule"], dict) else {}
        if section != "twin" and isinstance(holder, dict):
            holder = holder.setdefault(section, {})
        if not isinstance(holder, dict):  # an earlier mutation made the section a value
            continue
        key = draw(st.sampled_from([*OPTIONS[section], "bogus"]))
        how = draw(st.sampled_from(["value", "value", "special", "delete"]))
        if how == "delete":
            holder.pop(key, None)
        elif how == "special" and key in ("cron", "url"):
            holder[key] = draw(CRONS if key == "cron" else URLS)
        elif how == "special" and section == "placement":
            holder[key] = draw(LABELS)
        else:
            holder[key] = draw(HOSTILE)
    return data


RAW = st.one_of(
    st.integers(9, 6000).map(lambda n: "x = " + "[" * n + "]" * n + "\n"),
    st.integers(9, 3000).map(lambda n: "x = " + "{a = " * n + "1" + "}" * n + "\n"),
    st.sampled_from([b"\xff\xfe", b"[twin]\nurl = '\x00'\n", b"x = 1" + b"0" * 5000]),
    st.just(b"# " + b"a" * (1 << 20) + b"\n"),  # over the size limit by a few bytes
)


def drawn_file(data: st.DataObject) -> bytes:
    """One hostile (or occasionally valid) agent file."""
    if data.draw(st.integers(0, 9), label="raw?") == 0:
        raw = data.draw(RAW, label="raw")
        return raw if isinstance(raw, bytes) else raw.encode()
    return document(data.draw(mutated(), label="file")).encode("utf-8")


@dataclass
class Outcome:
    code: int | None  # None: it did not end in time
    text: str  # the output, whitespace collapsed
    crashed: bool


def invoke(args: list[str], limit: float = LIMIT_S) -> Outcome:
    """``twinsched ARGS`` in process, within ``limit`` seconds."""
    try:
        with time_limit(limit):
            result = CliRunner().invoke(app, args, env=ENV)
    except Slow as exc:
        return Outcome(None, str(exc), False)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    text = " ".join(result.output.split())
    return Outcome(result.exit_code, text, crashed or "Traceback" in result.output)


def error_text(outcome: Outcome) -> str:
    """The ``error: ...`` part of an output."""
    at = outcome.text.find("error:")
    return outcome.text[at:] if at >= 0 else outcome.text


def judge(raw: bytes, folder: Path, tally: AgentTally) -> None:
    """Check and run one file; count how they ended and whether they agree."""
    path = folder / "agent.toml"
    path.write_bytes(raw)
    tally.tried += 1
    check = invoke(["agent", "check", str(path)])
    start = time.monotonic()
    run_args = ["agent", "run", str(path), "--port", "0", "--duration", str(RUN_S)]
    run = invoke(run_args, RUN_S + LIMIT_S)  # a hang: not ended LIMIT_S past its duration
    took = time.monotonic() - start
    what = (
        f"{raw[:120]!r}: check {check.code} {check.text[:200]!r}; run {run.code} {run.text[:200]!r}"
    )
    if check.code is None or run.code is None:
        tally.hangs += 1
        tally.failed(f"hang ({took:.1f} s) {what}")
    elif check.crashed or run.crashed:
        tally.tracebacks += 1
        tally.failed(f"traceback {what}")
    elif (check.code, error_text(check)) != (run.code, error_text(run)) and check.code != 0:
        tally.disagree += 1
        tally.failed(f"disagree {what}")
    elif check.code == 0 and run.code == 0 and took < RUN_S:  # start = inf ended at once
        tally.disagree += 1
        tally.failed(f"run ended after {took:.2f} s, before its --duration {what}")
    elif check.code == 0 and run.code == 0:
        tally.accepted += 1
    elif check.code == 2 and check.text.startswith("error:") and len(check.text) < 4000:
        tally.clear += 1
    else:
        tally.disagree += check.code == 0  # check accepted a file run could not run
        tally.tracebacks += check.code != 0  # an exit without a clean message
        tally.failed(f"unclear {what}")


def fuzz(examples: int, folder: Path) -> AgentTally:
    """Try ``examples`` drawn files in ``folder``."""
    from hypothesis import HealthCheck, Phase, given, settings

    tally = AgentTally()

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.data())
    def one(data: st.DataObject) -> None:
        judge(drawn_file(data), folder, tally)

    one()
    return tally
