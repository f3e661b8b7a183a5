"""Bad option values for every ``twinsched`` command with numeric or path options.

:data:`TARGETS` is the documented contract, written here independently of ``cli/options.py``:
per command and option, the accepted range. Hypothesis draws values outside it (``bad``) and
inside it (``good``). A bad value runs the whole command (``tests/cli_runner.py``) in a
sandbox folder (the working directory, the store and the model registry all inside it) and
must end with a non-zero exit, a message, no traceback and no file written. A good value is
parsed only (``make_context``: types, ranges and checks run, the command body does not), so
that a valid value is never refused. Shared by ``tests/cli/test_fuzz_options.py`` (small
budget) and ``bench/fuzz_cli.py`` (the table in ``docs/reliability.md``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from hypothesis import strategies as st

from tests import fuzz_table
from tests.cli.fuzz_recipes import DISTIL_KEYS, TRAIN_KEYS, recipes
from tests.cli_runner import invoke, root_command
from twinsched.errors import TwinschedError

SEED_MAX = 2**32 - 1
ROOT = "{root}"  # stands for the sandbox folder in drawn values
Values = st.SearchStrategy[str]


@dataclass(frozen=True)
class Kind:
    """Bad and good values of one kind of option (``{root}`` is the sandbox folder)."""

    bad: Values
    good: Values
    file: bool = False  # values are a file's text: the option gets the file's path


def ints(lo: int, hi: int) -> Kind:
    junk = st.sampled_from(["", " ", "abc", "1.5", "inf", "nan", "1e3", "0x1F", "--", "1,2"])
    outside = st.integers(max_value=lo - 1) | st.integers(min_value=hi + 1)
    return Kind(outside.map(str) | junk, st.integers(lo, hi).map(str))


def floats(lo: float, hi: float, open_lo: bool = False) -> Kind:
    junk = st.sampled_from(["", "abc", "nan", "inf", "-inf", "1e400", "-1e400", "--", "1,2"])
    below = st.floats(max_value=lo, exclude_max=not open_lo, allow_nan=False)
    above = st.floats(min_value=hi, exclude_min=True, allow_nan=False)
    good = st.floats(lo, hi, exclude_min=open_lo, allow_nan=False)
    return Kind((below | above).map(repr) | junk, good.map(repr))


SEEDS = Kind(
    st.one_of(
        st.tuples(st.integers(1, SEED_MAX), st.integers(0, SEED_MAX))
        .filter(lambda t: t[0] > t[1])
        .map(lambda t: f"{t[0]}-{t[1]}"),  # a range written high first: 5-2
        st.integers(SEED_MAX + 1, 10**30).map(str),
        st.integers(max_value=-1).map(str),
        st.integers(0, 10**6).map(lambda a: f"{a}-{a + 10_000}"),  # over 10,000 seeds
        st.sampled_from(["", ",", " , ", "a", "1-", "-", "1--2", "1.5", "0-", "-0", "1-a"]),
    ),
    st.lists(st.integers(0, SEED_MAX), min_size=1, max_size=4).map(lambda s: ",".join(map(str, s)))
    | st.integers(0, 1000).map(lambda a: f"{a}-{a + 9}"),
)
TRAIN_RECIPE = Kind(*recipes(TRAIN_KEYS), file=True)
DISTIL_RECIPE = Kind(*recipes(DISTIL_KEYS), file=True)
RECIPE_FILE = "{root}/recipe.toml"
_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
OUT_DIR = Kind(
    st.one_of(
        st.sampled_from([f"{ROOT}/afile", "/proc/twinsched-fuzz/out", ""]),
        _WORD.map(lambda w: f"{ROOT}/afile/{w}"),
    ),
    _WORD.map(lambda w: f"{ROOT}/out-{w}"),
)
OUT_PATH = Kind(  # a file or a folder
    st.sampled_from(["/proc/twinsched-fuzz/x.json", ""]) | _WORD.map(lambda w: f"{ROOT}/afile/{w}"),
    _WORD.map(lambda w: f"{ROOT}/out-{w}.json"),
)
IN_DIR = Kind(
    st.sampled_from([f"{ROOT}/afile", "/proc/twinsched-fuzz"])
    | _WORD.map(lambda w: f"{ROOT}/no-{w}"),
    st.just(ROOT),
)
MODELS_DIR = Kind(
    st.sampled_from([f"{ROOT}/afile", ""]) | _WORD.map(lambda w: f"{ROOT}/afile/{w}"),
    st.just(ROOT) | _WORD.map(lambda w: f"{ROOT}/m-{w}"),
)
NAME = Kind(
    st.one_of(
        st.sampled_from(["", " ", " x", "x ", "a\tb", "a\nb", "x" * 201, "\x7f"]),
        st.tuples(_WORD, st.characters(categories=["Cc"]), _WORD).map("".join),
    ),
    _WORD,
)
_ILP = st.sampled_from(["ilp-alloc", "ilp-frag"])
SCHEDULER = Kind(
    st.one_of(
        st.tuples(_ILP, st.sampled_from("wk"), ints(1, 4096).bad).map(
            lambda t: f"{t[0]}/{t[1]}={t[2]}"
        ),
        st.tuples(_ILP, floats(0, 3600, open_lo=True).bad).map(lambda t: f"{t[0]}/t={t[1]}"),
        st.tuples(_ILP, st.sampled_from("abxyz")).map(lambda t: f"{t[0]}/{t[1]}=1"),
        st.sampled_from(["fgd/w=3", "ilp-alloc/", "ilp-alloc/w=2/w=3", "ilp-alloc/w", "nope"]),
    ),
    st.tuples(_ILP, st.integers(1, 4096)).map(lambda t: f"{t[0]}/w={t[1]}"),
)
DB = Kind(
    st.one_of(
        st.integers(1, 20).map(lambda p: f"postgresql://user:secret@127.0.0.1:{p}/x"),
        st.sampled_from(["sqlite:////proc/twinsched-fuzz/x.db", "foo://bar", "/proc/nope/x.db"]),
        _WORD.map(lambda w: f"{ROOT}/afile/{w}.db"),
    ),
    _WORD.map(lambda w: f"{ROOT}/{w}.db"),
)
WINDOW = Kind(
    st.sampled_from(["", "0", "0m", "abc", "h", "3x", "-5", "1e3", "1.5h"])
    | st.integers(10_081, 10**9).map(str),
    st.integers(1, 10_080).map(str) | st.sampled_from(["3h", "20m", "1h30m"]),
)
PORT = ints(0, 65_535)
SEED = ints(0, SEED_MAX)
RUN_ID = ints(1, 2**63 - 1)


@dataclass(frozen=True)
class Target:
    """One option (or argument, when ``option`` is empty) of one command."""

    command: tuple[str, ...]
    option: str
    kind: Kind
    extra: tuple[str, ...] = field(default=())  # words the command needs besides the option

    @property
    def name(self) -> str:
        return " ".join(self.command) + (f" {self.option}" if self.option else " ID")

    def args(self, value: str) -> list[str]:
        if not self.option:  # an argument: after "--", so that "-5" is a value
            return [*self.command, *self.extra, "--", value]
        return [*self.command, *self.extra, f"{self.option}={value}"]


def _t(command: str, option: str, kind: Kind, *extra: str) -> Target:
    return Target(tuple(command.split()), option, kind, extra)


TARGETS: tuple[Target, ...] = (
    _t("run", "--seeds", SEEDS),
    _t("run", "--jobs", ints(1, 256)),
    _t("run", "--target", floats(0, 1000, open_lo=True)),
    _t("run", "--out", OUT_DIR),
    _t("run", "--data", IN_DIR),
    _t("run", "--schedulers", SCHEDULER),
    _t("run", "--db", DB),
    _t("run", "--fault-rate", floats(0, 100), "--mode", "replay"),
    _t("run", "--mttr", floats(1, 1e7), "--mode", "replay"),
    _t("run", "--defer", floats(0, 1e7), "--mode", "replay"),
    _t("run", "--power-off", floats(1, 1e7), "--mode", "replay"),
    _t("demo", "--out", OUT_DIR),
    _t("demo", "--seeds", SEEDS),
    _t("optimum", "--seeds", SEEDS),
    _t("optimum", "--at", floats(0, 1000, open_lo=True)),
    _t("optimum", "--time-limit", floats(0, 86_400, open_lo=True)),
    _t("optimum", "--data", IN_DIR),
    _t("autoscale", "--seed", SEED),
    _t("autoscale", "--train-weeks", ints(1, 52)),
    _t("autoscale", "--eval-weeks", floats(0, 520, open_lo=True)),
    _t("autoscale", "--capacity", floats(0, 1e9, open_lo=True)),
    _t("autoscale", "--slo-ms", floats(0, 3.6e6, open_lo=True)),
    _t("autoscale", "--tolerance", floats(0, 100)),
    _t("autoscale", "--window", WINDOW),
    _t("autoscale", "--out", OUT_DIR),
    _t("autoscale", "--data", IN_DIR),
    _t("forecast-backtest", "--seed", SEED),
    _t("forecast-backtest", "--horizon", WINDOW),
    _t("forecast-backtest", "--out", OUT_DIR),
    _t("forecast-backtest", "--data", IN_DIR),
    _t("forecast-backtest", "--train-weeks", ints(1, 52)),
    _t("forecast-backtest", "--models-dir", MODELS_DIR),
    _t("train", "--recipe", TRAIN_RECIPE),
    _t("train", "--seed", SEED),
    _t("train", "--workers", ints(0, 1024)),
    _t("train", "--out", OUT_DIR),
    _t("train", "--models-dir", MODELS_DIR),
    _t("train", "--data", IN_DIR),
    _t("distil", "--recipe", DISTIL_RECIPE),
    _t("distil", "--workers", ints(0, 1024)),
    _t("workflow run", "--out", OUT_DIR, "all"),
    _t("workflow run", "--data", IN_DIR, "all"),
    _t("workflow run", "--time-scale", floats(0, 1000), "all"),
    _t("workflow run", "--jobs", ints(0, 256), "all"),
    _t("scenarios import", "--name", NAME, "twin-json", "{root}/doc.json"),
    _t("scenarios import", "--db", DB, "twin-json", "{root}/doc.json", "--name", "x"),
    _t("scenarios list", "--db", DB),
    _t("scenarios export", "--out", OUT_PATH, "x"),
    _t("runs list", "--limit", ints(1, 100_000)),
    _t("runs list", "--db", DB),
    _t("runs show", "", RUN_ID),
    _t("runs compare", "", RUN_ID, "1"),
    _t("runs compare", "--out", OUT_DIR, "1"),
    _t("kinds fit", "--k", ints(1, 64), "--out", "k.json"),
    _t("kinds fit", "--seeds", SEEDS, "--out", "k.json"),
    _t("kinds fit", "--kmeans-seed", ints(0, 2**32 - 1), "--out", "k.json"),
    _t("kinds fit", "--passes", ints(0, 10), "--out", "k.json"),
    _t("kinds fit", "--jobs", ints(1, 256), "--out", "k.json"),
    _t("kinds fit", "--data", IN_DIR, "--out", "k.json"),
    _t("models list", "--models-dir", MODELS_DIR),
    _t("models verify", "--models-dir", MODELS_DIR),
    _t("twin collect", "--interval", floats(0, 86_400, open_lo=True), "--once"),
    _t("vte serve", "--seed", SEED),
    _t("vte serve", "--speed", floats(0, 1e9, open_lo=True)),
    _t("vte serve", "--port", PORT),
    _t("vte serve", "--hold", floats(0, 86_400)),
    _t("vte serve", "--data", IN_DIR),
)


@dataclass
class Tally(fuzz_table.Tally):
    """The table's counts (no HTTP: 5xx stays 0), and valid values refused (must stay 0)."""

    refused_valid: int = 0


class Slow(Exception):
    """A bad value ran past the time limit: it was not refused before the work."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def alarm(*_: Any) -> None:
        raise Slow(f"still running after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def sandbox() -> Iterator[Path]:
    """A fresh folder as working directory, store and model registry; ``afile`` is a file."""
    with tempfile.TemporaryDirectory(prefix="twinsched-fuzz-") as raw:
        root = Path(raw)
        (root / "afile").write_text("a file, not a folder\n")
        (root / "doc.json").write_text("{}\n")
        before = Path.cwd()
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(before)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _parse_only(args: list[str]) -> None:
    """Parse ``twinsched ARGS`` (types, ranges, callbacks) without running the command."""
    command = root_command()
    words = list(args)
    while isinstance(command, typer.core.TyperGroup):
        command = command.get_command(None, words.pop(0))  # type: ignore[arg-type]
    command.make_context(args[0], words, resilient_parsing=False)


def _as_file(target: Target, value: str, root: Path) -> str:
    """For a file kind, ``value`` written to the sandbox's recipe file, and that path."""
    if not target.kind.file:
        return value
    (root / "recipe.toml").write_text(value, encoding="utf-8")
    return RECIPE_FILE


def _load_recipe(target: Target, path: Path) -> None:
    from twinsched.training.recipe_file import distil_spec, train_recipe

    (train_recipe if target.command == ("train",) else distil_spec)(path)


def check_bad(target: Target, value: str, tally: Tally, root: Path, limit: float = 30.0) -> None:
    """Run the command with a bad value; count how it ended."""
    value = _as_file(target, value, root)
    args = [a.replace(ROOT, str(root)) for a in target.args(value)]
    env = {
        "TWINSCHED_DB": f"sqlite:///{root}/store.db",
        "TWINSCHED_MODELS": str(root / "models"),
        "TWINSCHED_TWIN_TOKEN": "",
        "COLUMNS": "200",
    }
    before = _files(root)
    tally.tried += 1
    try:
        with time_limit(limit):
            result = invoke(args, env)
    except Slow as exc:
        tally.tracebacks += 1
        tally.failed(f"{args}: {exc}")
        return
    after = _files(root)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    if crashed or "Traceback" in result.output:
        tally.tracebacks += 1
        tally.failed(f"{args}: {type(result.exception).__name__}: {result.exception}")
    elif result.exit_code == 0 or after != before:
        tally.wrongly += 1
        tally.failed(f"{args}: exit {result.exit_code}, new files {sorted(after - before)}")
    elif not result.output.strip():
        tally.tracebacks += 1  # silent failure: no message at all
        tally.failed(f"{args}: exit {result.exit_code} with no message")
    else:
        tally.clear += 1


def check_good(target: Target, value: str, tally: Tally, root: Path) -> None:
    """Parse the command with a valid value; it must be accepted."""
    text, value = value, _as_file(target, value, root)
    args = [a.replace(ROOT, str(root)) for a in target.args(value)]
    tally.tried += 1
    try:
        _parse_only(args)
        if target.kind.file:  # the file's keys are checked when the command starts
            _load_recipe(target, root / "recipe.toml")
    except (typer.TyperException, TwinschedError) as exc:
        tally.refused_valid += 1
        tally.failed(f"{args}: valid value refused: {exc}\n{text}")
        return
    if target.kind is SCHEDULER:  # names are checked when a scheduler is made
        from twinsched.scheduling import registry

        registry.create(value)
    tally.accepted += 1


def fuzz(target: Target, examples: int, root: Path, good_in: int = 4) -> Tally:
    """Try ``examples`` drawn values on ``target`` (about one in ``good_in`` valid)."""
    from hypothesis import HealthCheck, Phase, given, settings

    tally = Tally()
    share = st.sampled_from(["good"] + ["bad"] * (good_in - 1))

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.data())
    def one(data: st.DataObject) -> None:
        if data.draw(share) == "good":
            check_good(target, data.draw(target.kind.good, label="good"), tally, root)
        else:
            check_bad(target, data.draw(target.kind.bad, label="bad"), tally, root)

    one()
    return tally
