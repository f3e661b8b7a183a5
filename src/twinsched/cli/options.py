"""Option parsing shared by the commands: checked before any work starts.

Every numeric option has a documented range (shown in ``--help`` as ``[lo..hi]``), every
output folder is probed for writability and every input folder for existence while the
command line is parsed, so a bad value ends in one ``Invalid value for '--x': ...`` line and
exit status 2, never in a traceback or a lost result. ``docs/cli.md`` lists the ranges.

Light on purpose (typer and the standard library only): every command module imports it at
start-up, ``twinsched --help`` included.
"""

from __future__ import annotations

import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from twinsched.errors import TwinschedError

SEED_MAX = 2**32 - 1  # numpy's seed range
SEEDS_MOST = 10_000  # seeds in one --seeds list
PORT_MAX = 65_535
NAME_MOST = 200  # characters of a stored name
SEED_RANGE = f"seeds 0..{SEED_MAX}, low-high ranges, at most {SEEDS_MOST}"


def split_list(text: str) -> list[str]:
    """The non-empty items of a comma-separated option, stripped: ``"a, b,"`` is ``[a, b]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _span(lo: float, hi: float, open_lo: bool = False) -> str:
    def show(x: float) -> str:
        return str(x) if isinstance(x, int) else f"{x:g}"

    return f"{'>' if open_lo else ''}{show(lo)}..{show(hi)}"


def _number_in(
    convert: Callable[[str], float], what: str, lo: float, hi: float, open_lo: bool
) -> Callable[[Any], Any]:
    """A parser of a number in ``lo..hi`` (finite bounds, so inf and nan fall outside)."""
    span = _span(lo, hi, open_lo)

    def parse(value: Any) -> Any:
        text = str(value).strip()
        try:
            number = convert(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not {what} (accepted: {span})") from None
        if not ((number > lo if open_lo else number >= lo) and number <= hi):
            raise typer.BadParameter(f"{text} is outside the accepted range {span}")
        return number

    return parse


def int_in(lo: int, hi: int) -> Callable[[Any], int]:
    """A parser of an integer option in ``lo..hi`` (the message names the accepted range)."""
    return _number_in(int, "an integer", lo, hi, False)


def float_in(lo: float, hi: float, open_lo: bool = False) -> Callable[[Any], float]:
    """A parser of a finite number in ``lo..hi`` (above ``lo`` with ``open_lo``)."""
    return _number_in(float, "a number", lo, hi, open_lo)


def int_opt(help: str, lo: int, hi: int, *decls: str) -> Any:
    """``typer.Option`` of an integer in ``lo..hi``; the range is appended to the help."""
    return typer.Option(
        *decls, help=f"{help} [{_span(lo, hi)}]", parser=int_in(lo, hi), metavar="INT"
    )


def float_opt(help: str, lo: float, hi: float, *decls: str, open_lo: bool = False) -> Any:
    """``typer.Option`` of a finite number in ``lo..hi``; the range is appended to the help."""
    return typer.Option(
        *decls,
        help=f"{help} [{_span(lo, hi, open_lo)}]",
        parser=float_in(lo, hi, open_lo),
        metavar="FLOAT",
    )


def _nearest_existing(path: Path) -> Path:
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def check_writable(raw: object, folder: bool | None = True) -> Path:
    """``raw`` as a path if a folder (``folder``), a file (not ``folder``) or either (None)
    could be written there, else raise ``BadParameter``. Nothing is left behind: the probe
    file goes in the nearest folder that exists and is removed at once."""
    text = str(raw)
    if not text.strip() or "\x00" in text:
        raise typer.BadParameter(f"{text!r} is not a path")
    path = Path(text)
    target = path.absolute()
    if folder is not None and target.exists() and folder != target.is_dir():
        want = "a folder" if folder else "a file"
        raise typer.BadParameter(f"{path} exists and is not {want}")
    base = _nearest_existing(target if target.is_dir() else target.parent)
    if base.is_file():
        raise typer.BadParameter(f"{path}: {base} is a file, not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=base, prefix=".twinsched-probe-"):
            pass
    except OSError as exc:
        raise typer.BadParameter(f"{path} is not writable: {exc.strerror or exc}") from None
    return path


def _in_dir(raw: object) -> Path:
    text = str(raw)
    path = Path(text)
    if not text.strip() or not path.is_dir():
        why = "is not a folder" if path.exists() else "does not exist"
        raise typer.BadParameter(f"data folder {text!r} {why}")
    return path


def out_dir_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of an output folder, probed for writability before any work."""
    return typer.Option(
        *decls, help=f"{help} [writable folder]", parser=check_writable, metavar="DIR"
    )


def out_path_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of an output file or folder, probed for writability before any work."""
    return typer.Option(
        *decls,
        help=f"{help} [writable file or folder]",
        parser=lambda raw: check_writable(raw, None),
        metavar="PATH",
    )


def in_dir_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of an input folder that must exist."""
    return typer.Option(*decls, help=f"{help} [existing folder]", parser=_in_dir, metavar="DIR")


def parse_seeds(text: str) -> list[int]:
    """Seeds from ``--seeds``: comma-separated integers and ranges like ``0-9`` (low first),
    each in ``0..SEED_MAX``, at least one and at most ``SEEDS_MOST`` in all."""
    seeds: list[int] = []
    for part in split_list(text):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or (not hi and part.endswith("-")):
            raise typer.BadParameter(f"seeds are integers or ranges like 0-9, got {part!r}")
        first, last = int(lo), int(hi or lo)
        if last > SEED_MAX:
            raise typer.BadParameter(f"seed {last} is outside the accepted range 0..{SEED_MAX}")
        if first > last:
            raise typer.BadParameter(f"seed range {part!r} is empty: write the low seed first")
        if len(seeds) + last - first + 1 > SEEDS_MOST:
            raise typer.BadParameter(f"at most {SEEDS_MOST} seeds in one list, got more")
        seeds += range(first, last + 1)
    if not seeds:
        raise typer.BadParameter(f"no seed in {text!r}: give integers or ranges like 0-9")
    return seeds


def checked_opt(help: str, parse: Callable[[str], object], *decls: str) -> Any:
    """``typer.Option`` of a text that ``parse`` checks while the command line is parsed (the
    command still gets the text; an optional option left out is not checked)."""

    def check(text: str | None) -> str | None:
        if text is not None:
            parse(text)
        return text

    return typer.Option(*decls, help=help, callback=check)


def check_scheduler(text: str | None) -> None:
    """Refuse a name that :func:`twinsched.scheduling.registry.check` refuses (nothing built)."""
    from twinsched.scheduling import registry

    if text is not None:
        try:
            registry.check(text)
        except TwinschedError as exc:
            raise typer.BadParameter(str(exc)) from None


def scheduler_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of a scheduler name, checked while the command line is parsed."""
    return checked_opt(help, check_scheduler, *decls)


WEIGHTS_RULE = "NAME=WEIGHT pairs, comma-separated; weights 0..1e6, a listed scheduler's name"


def parse_weights(text: str) -> dict[str, float]:
    """``fgd=2,leastallocated=1`` as ``{"fgd": 2.0, "leastallocated": 1.0}``."""
    from twinsched.scheduling.fanout.aggregator import check_weight

    weights: dict[str, float] = {}
    for part in split_list(text):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not name:
            raise typer.BadParameter(f"{part!r} is not NAME=WEIGHT (e.g. fgd=2)")
        if name in weights:
            raise typer.BadParameter(f"'{name}' is given a weight twice")
        try:
            weights[name] = check_weight(name, value.strip())
        except TwinschedError as exc:
            raise typer.BadParameter(str(exc)) from exc
    if not weights:
        raise typer.BadParameter(f"no weights in {text!r}: write {WEIGHTS_RULE}")
    return weights


def weights_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of aggregator weights (:func:`parse_weights`), checked while parsing;
    None when not given."""

    def check(text: str | None) -> str | None:
        if text is not None:
            parse_weights(text)
        return text

    return typer.Option(*decls, help=f"{help} [{WEIGHTS_RULE}]", callback=check)


def seeds_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of a seed list (:func:`parse_seeds`), checked while parsing."""
    return checked_opt(f"{help} [{SEED_RANGE}]", parse_seeds, *decls)


def check_name(text: str) -> str:
    """A stored name: 1 to ``NAME_MOST`` printable characters, no blank at either end."""
    if not text.strip():
        raise typer.BadParameter("a name cannot be empty")
    if len(text) > NAME_MOST:
        raise typer.BadParameter(f"a name has at most {NAME_MOST} characters, got {len(text)}")
    if text != text.strip() or any(unicodedata.category(c).startswith("C") for c in text):
        raise typer.BadParameter(f"{text!r}: no control characters or blanks at either end")
    return text


def name_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of a stored name (:func:`check_name`)."""
    rule = f"1..{NAME_MOST} characters, no control characters or blanks at either end"
    return typer.Option(*decls, help=f"{help} [{rule}]", callback=check_name)


def seed_opt(help: str = "seed", *decls: str) -> Any:
    """``typer.Option`` of one seed in ``0..SEED_MAX``."""
    return int_opt(help, 0, SEED_MAX, *decls)


def port_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of a TCP port (0: any free port)."""
    return int_opt(help, 0, PORT_MAX, *decls)


def check_broker(text: str | None) -> str | None:
    """A broker URL (``nats://`` or ``amqp://host[:port][/STREAM]``), or None when not given."""
    if text is None:
        return None
    from twinsched.twin.broker.url import BrokerConfigError, parse_broker_url

    try:
        parse_broker_url(text)
    except BrokerConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    return text


def broker_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of a broker URL (:func:`check_broker`), checked while parsing."""
    form = (
        "nats://host:port/STREAM (NATS JetStream, port 4222) or "
        "amqp://user:password@host:port/STREAM (RabbitMQ, port 5672); stream TWINSCHED"
    )
    return typer.Option(*decls, help=f"{help} [{form}]", callback=check_broker)


def _models_dir(raw: object) -> Path:
    path = Path(str(raw))
    if not str(raw).strip() or _nearest_existing(path).is_file():
        raise typer.BadParameter(f"{str(raw)!r} is not a folder and cannot become one")
    return path


TraceOpt = Annotated[
    str, typer.Option(help="trace name (see `twinsched traces`; `store`: --variant is a scenario)")
]
VariantOpt = Annotated[str, typer.Option(help="trace variant: default, gpushare40, ...")]
SeedsOpt = Annotated[str, seeds_opt("comma-separated seeds or ranges, e.g. 0-9")]
DataOpt = Annotated[
    Path | None, in_dir_opt("data folder (default $TWINSCHED_DATA, else ../shared/data)")
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Store URL or SQLite path (default: $TWINSCHED_DB, else the user data folder) "
        "[connected before any work]",
    ),
]
ModelsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--models-dir",
        help="Model registry folder (default: $TWINSCHED_MODELS, else the user data folder) "
        "[folder, if it exists]",
        parser=_models_dir,
        metavar="DIR",
    ),
]

ScenarioOpt = Annotated[
    str | None,
    typer.Option(
        help="a scenario from the store (see `twinsched scenarios list`), read from --db; "
        "stands for --trace store --variant NAME"
    ),
]


def scenario_source(
    trace: str, variant: str, data: Path | None, scenario: str | None, db: str | None
) -> tuple[str, str, str | None]:
    """(trace, variant, data) for :func:`twinsched.sim.scenarios.cached_scenario`.

    ``--scenario NAME`` (or ``--trace store --variant NAME``) names a stored scenario; see
    :func:`source_data` for the data location.
    """
    from twinsched.sim.scenarios import STORE

    if scenario is not None:
        trace, variant = STORE, check_name(scenario)
    if trace == STORE and not variant:
        raise typer.BadParameter("--trace store needs --variant NAME (or use --scenario NAME)")
    return trace, variant, source_data(trace, data, db)


def source_data(trace: str, data: Path | None, db: str | None) -> str | None:
    """Where ``trace`` is read: its data folder, or for the store the URL of the store at
    ``db``, opened now (a bad URL fails before any work); every worker then reads that URL."""
    from twinsched.sim.scenarios import STORE

    if trace != STORE:
        return str(data) if data else None
    check_store(db)
    from twinsched.store import resolve_url

    return resolve_url(db)


def load_source(trace: str, variant: str, data: str | None) -> Any:
    """The scenario :func:`scenario_source` names (a trace variant or a stored scenario)."""
    from twinsched.sim.scenarios import cached_scenario

    return cached_scenario(trace, variant, data)


def check_store(db: str | None, required: bool = True) -> None:
    """Open the store now (migrated on first use), so a URL that cannot connect fails before
    any work; without the store extra, only a ``required`` store is an error."""
    from twinsched.errors import MissingExtraError

    try:
        from twinsched.store.db import engine_for
    except MissingExtraError:
        if required:
            raise
        return
    engine_for(db)
