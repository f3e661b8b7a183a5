"""WfCommons instances read in place into the DAG model."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinsched.errors import DataNotFoundError, UnknownNameError
from twinsched.workflows import find_instance, instance_paths, load_instance
from twinsched.workflows.wfcommons import task_type

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

# (tasks, DAG edges) per instance, as listed in the data folder's README.
EXPECTED = {
    "1000genome-chameleon-2ch-100k-001": (52, 76),
    "1000genome-chameleon-8ch-250k-001": (328, 424),
    "cycles-chameleon-1l-1c-9p-001": (67, 97),
    "epigenomics-chameleon-hep-1seq-100k-001": (41, 48),
    "epigenomics-chameleon-ilmn-1seq-100k-001": (125, 153),
    "montage-chameleon-2mass-005d-001": (58, 114),
    "montage-chameleon-dss-10d-001": (472, 1284),
    "seismology-chameleon-100p-001": (101, 100),
    "soykb-chameleon-10fastq-10ch-001": (96, 194),
    "srasearch-chameleon-10a-001": (22, 30),
    "blast-chameleon-small-002": (43, 120),
    "bwa-chameleon-small-002": (104, 400),
}


def test_all_twelve_instances_load_with_the_documented_shape() -> None:
    paths = instance_paths(DATA)
    assert sorted(paths) == sorted(EXPECTED)
    for stem, path in paths.items():
        dag = load_instance(path)
        assert (dag.n, int(dag.parent.size)) == EXPECTED[stem], stem
        assert dag.work_s.min() > 0
        assert dag.topological_order.size == dag.n


def test_runtimes_sizes_and_external_inputs() -> None:
    dag = load_instance(find_instance("srasearch", DATA), inputs_at="edge")
    first = dag.names.index("bowtie2-build_ID0000001")
    assert dag.work_s[first] == pytest.approx(6.352)
    assert dag.constraints[first].memory_mib == 94720000 // (1024 * 1024)
    assert {d.location for d in dag.inputs} == {"edge"}
    assert dag.input_bytes() > 0
    assert dag.size_bytes.sum() > 1e9  # files passed between tasks
    assert dag.meta["recorded_makespan_s"] == pytest.approx(3488.0)
    assert task_type("mProject_ID0000001") == "mProject"
    types = load_instance(find_instance("epigenomics-chameleon-ilmn", DATA)).meta["task_types"]
    assert isinstance(types, list) and set(types) >= {"chr21", "fast2bfq"}


def test_unknown_instances_and_missing_data_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="montage-chameleon-2mass-005d-001"):
        find_instance("montage", DATA)  # ambiguous prefix: lists the candidates
    with pytest.raises(DataNotFoundError, match="wfcommons_instances"):
        instance_paths(tmp_path)
