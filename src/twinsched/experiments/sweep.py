"""A sweep as data: a TOML spec, its grid of :class:`RunSpec` cells, and each cell's key.

A spec names traces (``"trace"`` or ``"trace/variant"``), schedulers (parameters ride in the
name: ``ilp-frag/k=2``), seeds (a list, or a count ``n`` for ``0..n-1``) and fill-up targets;
the grid is their product, in that order, of at most :data:`MAX_CELLS` cells unless raised
(counted before any cell is built). A cell's key is the SHA-256 of its spec's canonical JSON:
the store keeps one result per key, so a rerun skips every finished cell. Names follow
:mod:`twinsched.model.names`; variants are checked by their trace (``traces.registry``).
``store/NAME`` names a stored scenario (``twinsched scenarios list``, a twin snapshot).

    name = "example"
    traces = ["synthetic-continuum", "synthetic-continuum/1"]
    schedulers = ["fgd", "bestfit", "random"]
    seeds = 3
    target_pct = [100.0, 130.0]
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable, Mapping
from itertools import product
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.model.names import check_safe_name
from twinsched.model.run import Mode, RunSpec

TARGET_MAX = 1000.0  # % of GPU capacity, as `twinsched run --target`
SEEDS_MAX = 2**31 - 1
MAX_CELLS = 100_000  # cells of one grid unless `sweep run --max-cells` raises it
CELLS_CEILING = 10**7  # the most --max-cells accepts (a 10^7-cell grid took 4.4 GB)
AXIS_MAX = 10_000  # values per list (traces, schedulers, seeds, targets)
STORE = "store"  # the trace of stored scenarios (sim.scenarios.STORE): "store/NAME"
Stored = tuple[str, str]  # a stored scenario's store URL and checksum
T = TypeVar("T")


class SweepSpecError(TwinschedError):
    """A sweep spec cannot be read; the message names the file and the TOML key."""


class SweepSpec(BaseModel):
    """The grid of a sweep (every field is a TOML key at the top level of the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    traces: list[str] = Field(min_length=1, max_length=AXIS_MAX)
    schedulers: list[str] = Field(min_length=1, max_length=AXIS_MAX)
    seeds: list[int] = Field(default=[0], min_length=1, max_length=AXIS_MAX)
    mode: Mode = "fillup"
    target_pct: list[float] = Field(default=[130.0], min_length=1, max_length=AXIS_MAX)
    sample_every_s: float = Field(default=3600.0, gt=0, le=86400.0 * 365)
    data: str | None = None
    validate_runs: bool = Field(default=False, alias="validate")
    # store each run's decisions (what `twinsched distil --from-sweep` retrains from)
    decisions: bool = False

    @field_validator("name")
    @classmethod
    def _safe_name(cls, name: str) -> str:
        return check_safe_name(name, "sweep name")

    @field_validator("seeds", mode="before")
    @classmethod
    def _count_or_list(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            if not 1 <= value <= 10_000:
                raise ValueError(f"a seed count must be in [1, 10000], got {value}")
            return list(range(value))
        return value

    @field_validator("seeds")
    @classmethod
    def _seed_range(cls, seeds: list[int]) -> list[int]:
        return _checked(seeds, "seeds", lambda s: 0 <= s <= SEEDS_MAX, f"[0, {SEEDS_MAX}]")

    @field_validator("target_pct")
    @classmethod
    def _target_range(cls, targets: list[float]) -> list[float]:
        span = f"(0, {TARGET_MAX:g}]"
        return _checked(targets, "fill-up targets", lambda t: 0 < t <= TARGET_MAX, span)

    @field_validator("schedulers")
    @classmethod
    def _known_schedulers(cls, names: list[str]) -> list[str]:
        from twinsched.scheduling import registry

        for name in names:
            try:
                registry.create(name)
            except (UnknownNameError, ValueError, TwinschedError) as exc:
                raise ValueError(str(exc)) from None
        return _unique(names, "schedulers")

    @field_validator("traces")
    @classmethod
    def _known_traces(cls, names: list[str]) -> list[str]:
        from twinsched.traces.registry import check_variant, split_trace

        for name in names:
            trace, variant = split_trace(name)
            if trace == STORE:  # a stored scenario: looked up in the store when run
                if not variant.strip():
                    raise ValueError(f"{name!r}: a stored scenario is 'store/NAME'")
                continue
            try:
                check_variant(trace, variant)
            except TwinschedError as exc:
                raise ValueError(str(exc)) from None
        return _unique(names, "traces")

    def stored_names(self) -> list[str]:
        """The stored scenarios the grid names (``store/NAME``), in order."""
        from twinsched.traces.registry import split_trace

        return [v for t, v in map(split_trace, self.traces) if t == STORE]

    def size(self) -> int:
        """How many cells the grid has: the product of its axes' lengths (nothing built)."""
        return len(self.traces) * len(self.schedulers) * len(self.seeds) * len(self.targets())

    def check_size(self, max_cells: int = MAX_CELLS) -> int:
        """:meth:`size`, or :class:`SweepSpecError` naming the cap when it is above it."""
        size = self.size()
        if size > max_cells:
            raise SweepSpecError(
                f"sweep '{self.name}': {size:,} cells ({len(self.traces)} traces x "
                f"{len(self.schedulers)} schedulers x {len(self.seeds)} seeds x "
                f"{len(self.targets())} targets) is over the cap of {max_cells:,} cells; "
                f"split the sweep, or raise the cap with `sweep run --max-cells N` "
                f"(at most {CELLS_CEILING:,})"
            )
        return size

    def cells(
        self, max_cells: int = MAX_CELLS, stored: Mapping[str, Stored] | None = None
    ) -> list[RunSpec]:
        """Every run of the grid: traces x schedulers x seeds x targets, in that order; a grid
        over ``max_cells`` is refused before any cell is built (:meth:`check_size`).

        ``stored`` gives each stored scenario of the grid its store URL and checksum
        (``sweep_driver.stored_scenarios``): its cells read that store and are keyed by the
        checksum, so a new version of the scenario is a new cell."""
        self.check_size(max_cells)
        sources = {trace: self._source(trace, stored or {}) for trace in self.traces}
        return [
            RunSpec(
                trace=sources[trace][0],
                scheduler=scheduler,
                seed=seed,
                variant=sources[trace][1],
                mode=self.mode,
                target_pct=target,
                sample_every_s=self.sample_every_s,
                data=sources[trace][2],
                validate=self.validate_runs,
                scenario_checksum=sources[trace][3],
            )
            for trace, scheduler, seed, target in product(
                self.traces, self.schedulers, self.seeds, self.targets()
            )
        ]

    def _source(
        self, name: str, stored: Mapping[str, Stored]
    ) -> tuple[str, str, str | None, str | None]:
        """(trace, variant, data, checksum) of one trace of the grid."""
        from twinsched.traces.registry import split_trace

        trace, variant = split_trace(name)
        if trace != STORE:
            return trace, variant, self.data, None
        if variant not in stored:
            raise SweepSpecError(
                f"sweep '{self.name}': '{name}' is a stored scenario; its cells are built "
                "with the store (sweep run --db)"
            )
        url, checksum = stored[variant]
        return trace, variant, url, checksum

    def targets(self) -> list[float]:
        """Replay runs have no fill-up target: one cell per seed, not one per target."""
        return self.target_pct if self.mode == "fillup" else self.target_pct[:1]


def _checked(values: list[T], what: str, ok: Callable[[T], bool], span: str) -> list[T]:
    """``values`` when each is in range (``ok``) and none is listed twice."""
    seen: set[T] = set()
    for value in values:
        if not ok(value):
            raise ValueError(f"{what} must be in {span}, got {value}")
        if value in seen:
            raise ValueError(f"{value!r} is listed twice in {what}")
        seen.add(value)
    return values


def _unique(values: list[T], what: str) -> list[T]:
    return _checked(values, what, lambda _: True, "")


def cell_key(spec: RunSpec) -> str:
    """The cell's key: SHA-256 of its spec as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def parse_spec(data: Mapping[str, Any], source: str = "<spec>") -> SweepSpec:
    """The spec in ``data`` (a parsed TOML document); :class:`SweepSpecError` naming the key."""
    try:
        return SweepSpec.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = f"unknown key; known: {', '.join(sorted(_keys()))}"
        raise SweepSpecError(f"{source}: key '{key}': {message}") from None


def _keys() -> list[str]:
    return [field.alias or name for name, field in SweepSpec.model_fields.items()]


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SweepSpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SweepSpecError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepSpecError(f"{path}: not valid TOML: {exc}") from None
    return parse_spec(data, str(path))
