"""Training recipe: behaviour cloning from a teacher, DAgger rounds, early stopping.

One typed spec in, a :class:`Policy` and its curves out. Every epoch logs training loss,
validation loss and agreement with the teacher; each round ends with fill-up runs of the
student on the validation scenarios (GPU allocation at 100 % arrived), the figure early
stopping and model selection use. Curves go to ``curves.csv`` and ``curves.png`` and the
best policy so far to ``checkpoints/`` under the output directory.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.dataset import Decisions, collect
from twinsched.scheduling.ai.features import POD_KINDS
from twinsched.scheduling.ai.policy import Policy, random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.ties import Ties, workload_context
from twinsched.scheduling.ai.torch_policy import NodeScorer, device, feature_scaling
from twinsched.sim import run_fillup

Log = Callable[[str], None]
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class TrainSpec:
    """Everything that decides a training run (stored with the model)."""

    trace: str = "alibaba-gpu-2023"
    train_variants: tuple[str, ...] = ("default",)
    val_variants: tuple[str, ...] = ()
    teacher: str = "fgd"
    seeds: tuple[int, ...] = (0,)  # fill-up orders used to collect decisions per variant
    val_seeds: tuple[int, ...] = (100,)
    dagger_rounds: int = 1
    epochs: int = 6
    patience: int = 2
    batch: int = 256
    lr: float = 3e-3
    hidden: tuple[int, ...] = (64, 64)
    candidates: int = 48
    seed: int = 0
    target_pct: float = 100.0
    data: str | None = None
    prior: tuple[tuple[str, float], ...] = ()  # e.g. (("fgd_score", 100.0),): start from FGD
    ppo_updates: int = 0
    ppo_steps: int = 512
    ppo_segment: int | None = 512
    ppo_max_offset: float = 0.9
    ppo_eval_every: int = 5
    tie_resolutions: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 20.0, 40.0)  # on validation
    teacher_ties: bool = False  # every node the teacher scored as high as its choice is right
    es_generations: int = 0  # evolution strategies after cloning/PPO (0: none), see es.py
    es_population: int = 12
    es_episodes: int = 16
    es_sigma: float = 0.05
    es_sigma_width: float = 0.5
    es_sigma_slope: float = 0.125
    es_base_width: float = 1.0  # the rule's width at its start (<= 1: FGD's exact scores)
    es_lr: float = 0.5
    es_features: tuple[str, ...] = ()  # a linear residual's (es.ES_FEATURES); none: ties
    es_seeds: tuple[int, ...] = tuple(range(1000, 1020))  # fill-up orders ES trains on
    es_val_on_train: bool = False  # ES also validates on training variants (new orders)
    es_patience: int = 8  # generations without a better validation allocation
    workers: int = 0  # processes for ES and gate fill-up runs (0: one per core)
    gate_seeds: tuple[int, ...] = ()  # fill-up orders of the tie-gate grid (none: no gates)
    gate_widths: tuple[float, ...] = (2.0, 3.0, 4.0, 6.0)  # widths measured per pod kind
    gate_z: float = 1.0  # gains count at mean - z standard errors over the gate seeds
    gate_min_variants: int = 2  # a gate opens on at least this many training variants
    gate_depth: int = 1  # conditions on the workload mix per gate (all must hold)

    def __post_init__(self) -> None:
        if self.gate_seeds and self.es_generations > 0:
            raise TwinschedError("choose evolution strategies or tie gates, not both")
        if self.gate_seeds and (
            self.gate_z < 0 or self.gate_min_variants < 1 or self.gate_depth < 1
        ):
            raise TwinschedError("tie gates need gate_z >= 0, gate_min_variants and depth >= 1")


@dataclass
class TrainResult:
    policy: Policy
    curves: list[dict[str, float]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    data_checksum: str = ""
    seconds: float = 0.0


def allocation(
    policy: Policy,
    scenarios: list[Scenario],
    seeds: tuple[int, ...],
    target_pct: float = 100.0,
    resolution: float = 0.0,
) -> float:
    """Mean GPU allocation ratio (%) at the end of fill-up runs of the policy."""
    values = []
    for scenario in scenarios:
        for seed in seeds:
            sched = PolicyScheduler("student", policy, resolution)
            run = run_fillup(scenario, sched, seed, target_pct=target_pct)
            values.append(float(run.summary["gpu_alloc_ratio_pct"]))
    return float(np.mean(values)) if values else float("nan")


def _batches(n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    order = rng.permutation(n)
    return [order[i : i + size] for i in range(0, n, size)]


def _listwise_loss(
    scorer: NodeScorer, rows: torch.Tensor, valid: torch.Tensor, best: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of "one of the teacher's best first" over each decision's candidates.

    The teacher's best set holds its choice and the candidates it scored as high (ties it
    broke at random), so the policy learns the teacher's scores, not its coin flips.
    """
    scores = scorer(rows).masked_fill(~valid, -1e9)
    good = scores.masked_fill(~best, -1e9)
    loss = (torch.logsumexp(scores, dim=1) - torch.logsumexp(good, dim=1)).mean()
    top = scores.argmax(dim=1, keepdim=True)
    agree = best.gather(1, top).float().mean()
    return loss, agree


def _positives(data: Decisions, spec: TrainSpec) -> np.ndarray:
    """Which candidates count as right: the teacher's choice, or with ``teacher_ties`` every
    candidate the teacher scored as high."""
    if spec.teacher_ties:
        return data.best
    first = np.zeros_like(data.valid)
    first[:, 0] = True
    return first


def _evaluate_loss(
    scorer: NodeScorer, data: Decisions, dev: str, spec: TrainSpec
) -> tuple[float, float]:
    if data.n == 0:
        return float("nan"), float("nan")
    positives = _positives(data, spec)
    losses, agrees, counts = [], [], []
    with torch.no_grad():
        for start in range(0, data.n, 2048):
            rows = torch.tensor(data.rows[start : start + 2048], dtype=torch.float32, device=dev)
            valid = torch.tensor(data.valid[start : start + 2048], device=dev)
            good = torch.tensor(positives[start : start + 2048], device=dev)
            loss, agree = _listwise_loss(scorer, rows, valid, good)
            losses.append(float(loss))
            agrees.append(float(agree))
            counts.append(rows.shape[0])
    w = np.array(counts, dtype=float)
    return float(np.average(losses, weights=w)), float(np.average(agrees, weights=w))


def fit(
    policy: Policy,
    data: Decisions,
    val: Decisions,
    spec: TrainSpec,
    *,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> Policy:
    """Behaviour cloning: best validation-loss epoch of at most ``spec.epochs``."""
    torch.manual_seed(spec.seed)
    dev = device()
    scorer = NodeScorer(policy).to(dev)
    optimiser = torch.optim.Adam(scorer.parameters(), lr=spec.lr)
    rng = np.random.default_rng(spec.seed)
    best, best_loss, stale = policy, float("inf"), 0
    positives = _positives(data, spec)  # once, not per batch
    for epoch in range(spec.epochs):
        scorer.train()
        total, seen = 0.0, 0
        for idx in _batches(data.n, spec.batch, rng):
            rows = torch.tensor(data.rows[idx], dtype=torch.float32, device=dev)
            valid = torch.tensor(data.valid[idx], device=dev)
            good = torch.tensor(positives[idx], device=dev)
            loss, _ = _listwise_loss(scorer, rows, valid, good)
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            total += float(loss.detach()) * idx.size
            seen += idx.size
        scorer.eval()
        val_loss, val_agree = _evaluate_loss(scorer, val if val.n else data, dev, spec)
        if on_epoch is not None:
            on_epoch({"epoch": epoch, "train_loss": total / max(seen, 1),
                      "val_loss": val_loss, "val_agreement": val_agree})  # fmt: skip
        if val_loss < best_loss - 1e-4:
            best, best_loss, stale = scorer.to_policy(policy.meta), val_loss, 0
        else:
            stale += 1
            if stale >= spec.patience:
                break
    return best


def write_curves(curves: list[dict[str, float]], out: Path) -> None:
    """``curves.csv`` and, when matplotlib is there, ``curves.png`` (losses and allocation)."""
    if not curves:
        return
    names = sorted({k for row in curves for k in row}, key=lambda k: (k != "step", k))
    with (out / "curves.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(curves)
    from twinsched.scheduling.ai.plots import plot_curves

    plot_curves(curves, out / "curves.png")


def train(
    spec: TrainSpec,
    load: Callable[[str], Scenario],
    out: Path | None = None,
    *,
    log: Log | None = None,
    progress: Progress | None = None,
) -> TrainResult:
    """Cloning from ``spec.teacher`` (+ DAgger), then PPO, then evolution strategies or
    tie gates.

    The best policy is the one with the highest validation allocation among the starting
    point, each cloning round, each PPO evaluation and each ES generation. Its tie width is
    searched on validation runs, unless ES or the gates chose them per pod kind.
    """
    started = time.perf_counter()
    run = _Run(spec, load, out, log or (lambda _m: None), progress)
    policy = run.clone()
    if spec.ppo_updates > 0:
        run.reinforce(policy)
    if spec.es_generations > 0:
        run.evolve(run.best.policy)
    elif spec.gate_seeds:
        run.gate(run.best.policy)
    data = Decisions.concat(run.parts)
    best = run.best
    metrics = {"decisions": float(data.n)}
    if best.ties is None:
        width, score = run.tie_resolution(best.policy, best.score)
        resolution: object = width
        metrics["resolution"] = width
    else:
        resolution, score = best.ties.to_meta(), best.score
        metrics.update(run.widths_on_validation(best.ties))
    result = TrainResult(
        policy=replace(best.policy, meta={"spec": asdict(spec), "resolution": resolution}),
        curves=run.curves,
        metrics={"val_alloc_pct": score, **metrics},
        data_checksum=data.checksum(),
        seconds=time.perf_counter() - started,
    )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_curves(run.curves, out)
        result.policy.save(out / "policy.npz")
    return result


@dataclass(frozen=True)
class _Best:
    score: float
    policy: Policy
    ties: Ties | None = None  # when ES or gates chose them (else: searched on validation)


class _Run:
    """The state of one training run: data so far, curves, best policy, checkpoints."""

    def __init__(
        self,
        spec: TrainSpec,
        load: Callable[[str], Scenario],
        out: Path | None,
        say: Log,
        progress: Progress | None,
    ) -> None:
        self.spec, self.out, self.say, self.progress = spec, out, say, progress
        self.train_sets = [load(v) for v in spec.train_variants]
        self.val_sets = [load(v) for v in spec.val_variants]
        self.curves: list[dict[str, float]] = []
        self.parts: list[Decisions] = []
        self.val_parts: list[Decisions] = []
        self.best = _Best(-float("inf"), random_policy(spec.hidden, spec.seed))

    def validate(self, policy: Policy, tag: str) -> float:
        """Validation allocation; keeps (and checkpoints) the best policy."""
        spec = self.spec
        score = allocation(
            policy, self.val_sets or self.train_sets, spec.val_seeds, spec.target_pct
        )
        self.keep(_Best(score, policy), tag)
        return score

    def keep(self, candidate: _Best, tag: str) -> bool:
        """Keep (and checkpoint) ``candidate`` if it beats the best so far."""
        if candidate.score <= self.best.score:
            return False
        self.best = candidate
        if self.out is not None:
            (self.out / "checkpoints").mkdir(parents=True, exist_ok=True)
            ties = candidate.ties.to_meta() if candidate.ties else 0.0
            meta = {**candidate.policy.meta, "resolution": ties}
            replace(candidate.policy, meta=meta).save(self.out / "checkpoints" / f"{tag}.npz")
        return True

    def widths_on_validation(self, ties: Ties) -> dict[str, float]:
        """The rule's tie width per pod kind on each validation scenario's workload."""
        out = {}
        for name, scenario in zip(self.spec.val_variants, self.val_sets, strict=True):
            widths = ties.widths(workload_context(scenario.pods))
            for kind, width in zip(POD_KINDS, widths, strict=True):
                out[f"tie_width_{name}/{kind}"] = float(width)
        return out

    def tie_resolution(self, policy: Policy, exact: float) -> tuple[float, float]:
        """The score bucket width (0: exact) with the best validation allocation."""
        best = (0.0, exact)
        for width in self.spec.tie_resolutions:
            if width > 0:
                score = allocation(
                    policy, self.val_sets or self.train_sets, self.spec.val_seeds,
                    self.spec.target_pct, width,
                )  # fmt: skip
                self.say(f"ties within {width:g}: validation allocation {score:.3f} %")
                if score > best[1]:
                    best = (width, score)
        return best

    def clone(self) -> Policy:
        """Collect teacher decisions (they also fix the feature scaling), clone, DAgger."""
        spec = self.spec
        prior = dict(spec.prior) if spec.prior else None
        policy = random_policy(spec.hidden, spec.seed, prior)
        rounds = spec.dagger_rounds + 1 if spec.epochs > 0 else 1
        steps = rounds * (len(self.train_sets) * len(spec.seeds) + len(self.val_sets))
        done = 0
        for round_ in range(rounds):
            actor = None if round_ == 0 else PolicyScheduler("student", policy)
            jobs = [(s, seed, self.parts) for s in self.train_sets for seed in spec.seeds]
            jobs += [(s, spec.val_seeds[0], self.val_parts) for s in self.val_sets]
            for scenario, seed, into in jobs:
                into.append(
                    collect(
                        scenario,
                        spec.teacher,
                        seed + 1000 * round_,
                        actor=actor,
                        candidates=spec.candidates,
                        target_pct=spec.target_pct,
                    )
                )
                done += 1
                if self.progress:
                    self.progress(f"round {round_}: collecting", done, steps)
            data, val = Decisions.concat(self.parts), Decisions.concat(self.val_parts)
            if round_ == 0:
                mean, std = feature_scaling(data.rows, data.valid)
                policy = replace(policy, mean=mean, std=std)
                if spec.epochs == 0 or prior:
                    start = self.validate(policy, "start")
                    self.curves.append({"step": 0, "val_alloc_pct": start})
                    self.say(f"starting policy: validation allocation {start:.3f} %")
            if spec.epochs == 0:
                break

            def on_epoch(row: dict[str, float], r: int = round_) -> None:
                self.curves.append({"step": len(self.curves), "round": r, **row})
                self.say(
                    f"round {r} epoch {int(row['epoch'])}: train {row['train_loss']:.4f} "
                    f"val {row['val_loss']:.4f} agree {row['val_agreement']:.3f}"
                )

            policy = fit(policy, data, val, spec, on_epoch=on_epoch)
            score = self.validate(policy, f"round{round_}")
            self.curves[-1]["val_alloc_pct"] = score
            self.say(f"round {round_}: {data.n} decisions, validation allocation {score:.3f} %")
        return self.best.policy

    def reinforce(self, policy: Policy) -> None:
        """PPO from ``policy``, validating every ``ppo_eval_every`` updates; early stopping."""
        from twinsched.envs import EnvConfig
        from twinsched.scheduling.ai.ppo import PpoSpec, fine_tune

        spec = self.spec
        env = EnvConfig(
            trace=spec.trace, variants=spec.train_variants, data=spec.data,
            segment_length=spec.ppo_segment, max_start_offset=spec.ppo_max_offset,
            target_pct=spec.target_pct,
        )  # fmt: skip
        ppo = PpoSpec(env=env, updates=spec.ppo_updates, steps=spec.ppo_steps, seed=spec.seed)
        stale = 0

        def on_update(row: dict[str, float], current: Policy) -> bool:
            nonlocal stale
            entry = {"step": len(self.curves), **{f"ppo_{k}": v for k, v in row.items()}}
            update = int(row["update"]) + 1
            if update % spec.ppo_eval_every == 0 or update == spec.ppo_updates:
                before = self.best.score
                entry["val_alloc_pct"] = self.validate(current, f"ppo{update}")
                stale = 0 if self.best.score > before else stale + 1
                self.say(
                    f"PPO update {update}: validation allocation {entry['val_alloc_pct']:.3f} %"
                )
            self.curves.append(entry)
            if self.progress:
                self.progress("PPO", update, spec.ppo_updates)
            return stale < spec.patience

        fine_tune(policy, ppo, on_update)

    def evolve(self, policy: Policy) -> None:
        """Evolution strategies from ``policy`` on fill-up outcomes (see :mod:`es`)."""
        from twinsched.scheduling.ai.es import EsSpec, Generation, Runs, search

        spec = self.spec
        es = EsSpec(
            generations=spec.es_generations, population=spec.es_population,
            sigma=spec.es_sigma, sigma_width=spec.es_sigma_width, lr=spec.es_lr,
            sigma_slope=spec.es_sigma_slope, resolution=spec.es_base_width,
            episodes=spec.es_episodes, features=spec.es_features, workers=spec.workers,
            seed=spec.seed,
        )  # fmt: skip
        runs = Runs(
            spec.trace, spec.train_variants, spec.es_seeds, spec.val_variants,
            spec.val_seeds, spec.target_pct, spec.data, spec.es_val_on_train,
        )  # fmt: skip
        stale = 0

        def on_generation(g: Generation) -> bool:
            nonlocal stale
            if g.index == 0:
                # ES validates on its own runs (with es_val_on_train, more than the start
                # was): generation 0 re-measures the start there, and is the one to beat.
                self.best = replace(self.best, score=-float("inf"))
            better = self.keep(_Best(g.validation, g.policy, g.ties), f"es{g.index}")
            stale = 0 if better or g.index == 0 else stale + 1
            self.curves.append(
                {"step": len(self.curves), "es_generation": g.index, "es_mean": g.mean,
                 "es_best": g.best, "val_alloc_pct": g.validation}
            )  # fmt: skip
            widths = self.widths_on_validation(g.ties)
            self.say(
                f"ES generation {g.index}: candidates {g.mean:.3f} % (best {g.best:.3f}), "
                f"validation {g.validation:.3f} %; tie widths "
                + ", ".join(f"{k[10:]} {w:.2f}" for k, w in widths.items())
            )
            if self.progress:
                self.progress("evolution strategies", g.index, spec.es_generations)
            return stale < spec.es_patience

        search(policy, es, runs, on_generation)

    def gate(self, policy: Policy) -> None:
        """Tie gates (see :mod:`gates`): measure per-kind tie widths on the training variants,
        fit where they pay, and keep the gated rule if it beats FGD's ties on validation."""
        from twinsched.scheduling.ai.es import Runs, fillup_jobs, job_runner, validation_runs
        from twinsched.scheduling.ai.gates import fit, measure, save, write_csv
        from twinsched.scheduling.ai.ties import TieGates

        spec = self.spec

        def progress(done: int, total: int) -> None:
            if self.progress:
                self.progress("tie gates: grid runs", done, total)

        grid = measure(
            policy, spec.trace, spec.train_variants, spec.gate_widths, spec.gate_seeds,
            data=spec.data, target_pct=spec.target_pct, workers=spec.workers,
            progress=progress,
        )  # fmt: skip
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            write_csv(grid, self.out / "gate_grid.csv")
            save(grid, self.out / "gate_grid.npz")
        rule = fit(grid, z=spec.gate_z, min_variants=spec.gate_min_variants, depth=spec.gate_depth)
        for g in rule.gates:
            self.say(f"tie gate: {g.describe()}")
        fgd = TieGates(())
        runs = Runs(
            spec.trace, spec.train_variants, spec.gate_seeds, spec.val_variants,
            spec.val_seeds, spec.target_pct, spec.data, spec.es_val_on_train,
        )  # fmt: skip
        episodes = validation_runs(runs)
        with job_runner(spec.workers) as run_all:

            def score(ties: Ties) -> float:
                return float(np.mean(run_all(fillup_jobs(policy, ties, runs, episodes))))

            start = score(fgd)
            gated = score(rule) if rule.gates else start
        self.say(f"tie gates: validation {gated:.3f} % against FGD's ties {start:.3f} %")
        self.best = replace(self.best, score=-float("inf"))  # re-measured on these runs
        self.keep(_Best(start, policy, fgd), "fgd_ties")
        if rule.gates:
            self.keep(_Best(gated, policy, rule), "gates")
        self.curves.append({"step": len(self.curves), "val_alloc_pct": self.best.score})
