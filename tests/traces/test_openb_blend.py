"""Blends of two openb variants: mixes between the published ones, the same on every machine."""

from __future__ import annotations

import numpy as np
import pytest

from twinsched.sim.scenarios import cached_scenario
from twinsched.traces import alibaba_gpu_2023 as ali
from twinsched.traces.openb_blend import random_blends
from twinsched.traces.registry import VariantError, check_variant

TRACE = "alibaba-gpu-2023"


def _cpu_share(variant: str) -> float:
    pods = ali.load(variant).pods
    return float((pods.gpu_count == 0).mean())


def test_a_blend_lies_between_its_two_variants_and_draws_from_both() -> None:
    low, high = _cpu_share("cpu0"), _cpu_share("cpu300")
    shares = [_cpu_share(f"blend-cpu0-cpu300-{p:02d}") for p in (10, 50, 90)]
    assert low < shares[0] < shares[1] < shares[2] < high
    pods = ali.load("blend-cpu0-cpu300-50").pods
    sources = {name.split(":")[0] for name in pods.names}
    assert sources == {"cpu0", "cpu300"} and len(set(pods.names)) == pods.n
    # about half of each list: cpu0 has 7,064 pods, cpu300 10,094
    assert abs(pods.n - (7064 + 10094) / 2) < 300


def test_a_blend_keeps_the_columns_of_the_pods_it_draws() -> None:
    blend = ali.load("blend-default-gpuspec25-60").pods
    spec = ali.load("gpuspec25").pods
    index = {name: i for i, name in enumerate(spec.names)}
    drawn = [
        (i, index[n.split(":", 1)[1]])
        for i, n in enumerate(blend.names)
        if n.startswith("gpuspec25:")
    ]
    mine, theirs = (np.array(side) for side in zip(*drawn, strict=True))
    for column in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli", "model_mask"):
        assert (getattr(blend, column)[mine] == getattr(spec, column)[theirs]).all(), column
    assert (blend.model_mask > 0).any()  # the model-tied pods came along


def test_a_blend_is_the_same_every_time_and_through_the_trace_cache(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_CACHE", str(tmp_path))
    first = ali.load("blend-gpushare40-gpushare80-35").pods
    cached = [cached_scenario(TRACE, "blend-gpushare40-gpushare80-35", None) for _ in range(2)]
    for scenario in cached:
        assert scenario.pods.names == first.names
        assert (scenario.pods.gpu_milli == first.gpu_milli).all()
    other = ali.load("blend-gpushare40-gpushare80-36").pods
    assert other.names != first.names  # another percent draws another list


@pytest.mark.parametrize(
    ("variant", "says"),
    [
        ("blend-cpu999-cpu250-40", "variant in 'blend-cpu999-cpu250-40' 'cpu999'; known: cpu0"),
        ("blend-cpu200-cpu250-00", "known: blend-A-B-PP (A, B two variants, PP 01-99"),
        ("blend-cpu200-cpu250-100", "known: blend-A-B-PP"),
        ("blend-cpu200-40", "known: blend-A-B-PP"),
    ],
)
def test_a_bad_blend_is_refused_naming_the_part_and_the_form(variant: str, says: str) -> None:
    with pytest.raises(VariantError) as refused:
        check_variant(TRACE, variant)
    assert says in str(refused.value)


def test_random_blends_are_distinct_seeded_and_of_the_given_variants() -> None:
    variants = ("default", "cpu0", "cpu300", "gpuspec25")
    drawn = random_blends(variants, 30, seed=3)
    assert drawn == random_blends(variants, 30, seed=3) != random_blends(variants, 30, seed=4)
    assert len(set(drawn)) == 30
    for name in drawn:
        parts = ali.blend_parts(name)
        assert parts is not None
        first, second, percent = parts
        assert {first, second} <= set(variants) and first != second and 10 <= percent <= 90
    with pytest.raises(ValueError, match=r"count must be in \[0, 486\]"):
        random_blends(variants, 487, seed=0)
