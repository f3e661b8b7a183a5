"""Labels and GPU models are 64-bit sets: a 65th name is refused, never wrapped onto another.

``model_in_mask`` shifts a ``uint64`` by the node's model index: an index of 64 shifted by 0
on x86 (the shift count wraps), so a node of the 65th model matched pods asking for the 1st.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.model.test_document import node, tiny
from twinsched.errors import TwinschedError
from twinsched.model.cluster import MAX_GPU_MODELS, MAX_LABELS, nodes_from_columns
from twinsched.model.convert import document_to_scenario
from twinsched.model.document import DocumentError
from twinsched.model.ranges import scenario_problem
from twinsched.model.schema import validate_document
from twinsched.scheduling.filters import model_in_mask
from twinsched.traces.synthetic import continuum


def model_nodes(models: int) -> object:
    names = [f"n{k:03d}" for k in range(models)]
    ones = [1] * models
    return nodes_from_columns(names, ones, ones, ones, [f"m{k:03d}" for k in range(models)])


def test_every_one_of_64_models_selects_its_own_node_only() -> None:
    nodes = model_nodes(MAX_GPU_MODELS)
    for k in range(MAX_GPU_MODELS):
        chosen = np.flatnonzero(model_in_mask(nodes.gpu_model, 1 << k))  # type: ignore[attr-defined]
        assert chosen.tolist() == [k]


@pytest.mark.parametrize("models", [MAX_GPU_MODELS + 1, 200])
def test_more_gpu_models_than_the_bitset_holds_are_refused(models: int) -> None:
    with pytest.raises(TwinschedError, match=f"{models} distinct GPU models.*at most 64"):
        model_nodes(models)


def test_a_stored_scenario_with_more_models_is_a_problem() -> None:
    scenario = continuum(0)
    many = tuple(f"m{k}" for k in range(MAX_GPU_MODELS + 1))
    problem = scenario_problem(replace(scenario, nodes=replace(scenario.nodes, gpu_models=many)))
    assert problem is not None and problem.field == "gpu_model" and "at most 64" in problem.problem


@pytest.mark.parametrize("what", ["labels", "models"])
def test_a_document_with_65_labels_or_models_is_a_document_error(what: str) -> None:
    doc = tiny()
    extra = [node(f"x{k}", gpus=1, model=f"m{k}") for k in range(MAX_GPU_MODELS + 1)]
    if what == "labels":
        extra = [node(f"x{k}") | {"labels": {f"k{k}": "v"}} for k in range(MAX_LABELS + 1)]
    doc["nodepools"].append({"id": "many", "nodes": extra})
    with pytest.raises(DocumentError) as caught:
        document_to_scenario(validate_document(doc), "d")
    assert caught.value.problems[0][0] == "nodepools"
    assert f"more than {MAX_LABELS} distinct labels" in str(caught.value) or (
        "at most 64" in str(caught.value)
    )
