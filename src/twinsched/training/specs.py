"""What decides a training run: one frozen spec per phase, gathered in a :class:`Recipe`.

``twinsched train`` runs the phases in order (:mod:`twinsched.training.recipe`): cloning from
a teacher (:class:`ClonePhase`) with DAgger rounds (:class:`DaggerPhase`), PPO
(:class:`PpoPhase`), then evolution strategies (:class:`EsPhase`) or tie gates
(:class:`GatePhase`), and last the tie width searched on validation (:class:`TiePhase`). A
phase whose budget is zero (no PPO updates, no ES generations, no gate seeds) is skipped.

The :class:`Recipe` checks its phases when it is built. The model, its card and
``spec.json`` store :meth:`Recipe.record`, a flat mapping with the keys saved models have
always had, so models trained before and after read the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twinsched.errors import TwinschedError


@dataclass(frozen=True)
class DataSpec:
    """Where the scenarios come from and how validation runs are played."""

    trace: str = "alibaba-gpu-2023"
    train_variants: tuple[str, ...] = ("default",)
    val_variants: tuple[str, ...] = ()
    val_seeds: tuple[int, ...] = (100,)  # fill-up orders of the validation runs
    target_pct: float = 100.0  # fill-up runs stop at this share of the workload arrived
    data: str | None = None  # trace data folder (None: the default)
    val_on_train: bool = False  # ES and gates also validate on training variants (new orders)


@dataclass(frozen=True)
class ClonePhase:
    """Behaviour cloning: whose decisions, how many, and the network that learns them."""

    teacher: str = "fgd"
    seeds: tuple[int, ...] = (0,)  # fill-up orders used to collect decisions per variant
    epochs: int = 6  # most epochs per round (0: no cloning, the start is validated)
    patience: int = 2  # worse epochs before a round stops (and PPO evaluations, see PpoPhase)
    batch: int = 256
    lr: float = 3e-3
    hidden: tuple[int, ...] = (64, 64)
    candidates: int = 48  # nodes kept per decision
    prior: tuple[tuple[str, float], ...] = ()  # e.g. (("fgd_score", 100.0),): start from FGD
    teacher_ties: bool = False  # every node the teacher scored as high as its choice is right
    teacher_contested_only: bool = False  # keep only decisions where the teacher compared nodes


@dataclass(frozen=True)
class DaggerPhase:
    """DAgger: rounds that collect the teacher's decisions on states the student reaches."""

    rounds: int = 1


@dataclass(frozen=True)
class PpoPhase:
    """PPO after cloning (0 updates: none); it stops after ``ClonePhase.patience``
    evaluations without a better validation allocation (one ``clone.patience`` for both)."""

    updates: int = 0
    steps: int = 512  # environment steps per update
    segment: int | None = 512
    max_offset: float = 0.9
    eval_every: int = 5  # updates between validations


@dataclass(frozen=True)
class EsPhase:
    """Evolution strategies after cloning/PPO (0 generations: none), see :mod:`evolution`."""

    generations: int = 0
    population: int = 12
    episodes: int = 16
    sigma: float = 0.05
    sigma_width: float = 0.5
    sigma_slope: float = 0.125
    base_width: float = 1.0  # the rule's width at its start (<= 1: FGD's exact scores)
    lr: float = 0.5
    features: tuple[str, ...] = ()  # a linear residual's (evolution.ES_FEATURES); none: ties
    seeds: tuple[int, ...] = tuple(range(1000, 1020))  # fill-up orders ES trains on
    patience: int = 8  # generations without a better validation allocation


@dataclass(frozen=True)
class GatePhase:
    """Tie gates instead of ES (no seeds: none), see :mod:`gates`."""

    seeds: tuple[int, ...] = ()  # fill-up orders of the tie-gate grid
    widths: tuple[float, ...] = (2.0, 3.0, 4.0, 6.0)  # widths measured per pod kind
    z: float = 1.0  # gains count at mean - z standard errors over the gate seeds
    min_variants: int = 2  # a gate opens on at least this many training variants
    depth: int = 1  # conditions on the workload mix per gate (all must hold)

    def check(self) -> None:
        """Raise if the gates would run with thresholds that mean nothing."""
        if self.seeds and (self.z < 0 or self.min_variants < 1 or self.depth < 1):
            raise TwinschedError("tie gates need gate_z >= 0, gate_min_variants and depth >= 1")


@dataclass(frozen=True)
class TiePhase:
    """Score tie widths tried on validation when neither ES nor gates chose them."""

    resolutions: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 20.0, 40.0)


@dataclass(frozen=True)
class Recipe:
    """Everything that decides a training run: the data and one spec per phase."""

    data: DataSpec = field(default_factory=DataSpec)
    clone: ClonePhase = field(default_factory=ClonePhase)
    dagger: DaggerPhase = field(default_factory=DaggerPhase)
    ppo: PpoPhase = field(default_factory=PpoPhase)
    es: EsPhase = field(default_factory=EsPhase)
    gates: GatePhase = field(default_factory=GatePhase)
    ties: TiePhase = field(default_factory=TiePhase)
    seed: int = 0  # initialisation, batching, PPO and ES noise
    workers: int = 0  # processes for ES and gate fill-up runs (0: one per core)

    def __post_init__(self) -> None:
        if self.gates.seeds and self.es.generations > 0:
            raise TwinschedError("choose evolution strategies or tie gates, not both")
        self.gates.check()  # after the cross-phase check, so a mix of both errors says that

    def record(self) -> dict[str, object]:
        """The flat mapping stored with the model, its card and ``spec.json``."""
        d, c, p, e, g = self.data, self.clone, self.ppo, self.es, self.gates
        return {
            "trace": d.trace, "train_variants": d.train_variants,
            "val_variants": d.val_variants, "teacher": c.teacher, "seeds": c.seeds,
            "val_seeds": d.val_seeds, "dagger_rounds": self.dagger.rounds,
            "epochs": c.epochs, "patience": c.patience, "batch": c.batch, "lr": c.lr,
            "hidden": c.hidden, "candidates": c.candidates, "seed": self.seed,
            "target_pct": d.target_pct, "data": d.data, "prior": c.prior,
            "ppo_updates": p.updates, "ppo_steps": p.steps, "ppo_segment": p.segment,
            "ppo_max_offset": p.max_offset, "ppo_eval_every": p.eval_every,
            "tie_resolutions": self.ties.resolutions, "teacher_ties": c.teacher_ties,
            "es_generations": e.generations, "es_population": e.population,
            "es_episodes": e.episodes, "es_sigma": e.sigma, "es_sigma_width": e.sigma_width,
            "es_sigma_slope": e.sigma_slope, "es_base_width": e.base_width, "es_lr": e.lr,
            "es_features": e.features, "es_seeds": e.seeds, "es_val_on_train": d.val_on_train,
            "es_patience": e.patience, "workers": self.workers, "gate_seeds": g.seeds,
            "gate_widths": g.widths, "gate_z": g.z, "gate_min_variants": g.min_variants,
            "gate_depth": g.depth, "teacher_contested_only": c.teacher_contested_only,
        }  # fmt: skip
