"""One test per class of bad command line that issue 16 found (each failed before the fix).

Every bad value ends in exit status 2 (a usage or input error) with a message naming the
option and the accepted range, before any work: no traceback, nothing written, nothing
recorded. Commands that used to run forever run under a time limit, so they fail, not hang.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.cli.fuzzing import time_limit
from twinsched.cli import app
from twinsched.scheduling.ai.model_store import CARD, ModelRegistry

runner = CliRunner()


def invoke(*args: str, seconds: float = 20.0) -> Result:
    with time_limit(seconds):
        result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not crashed, f"traceback: {result.exception!r}\n{result.output}"
    assert "Traceback" not in result.output
    return result


def refused(*args: str, says: str, seconds: float = 20.0) -> str:
    """Run ``twinsched ARGS``: exit 2 and ``says`` in the message; the message."""
    result = invoke(*args, seconds=seconds)
    assert result.exit_code == 2, result.output
    flat = " ".join(line.strip(" │╭╮╰╯─") for line in result.output.splitlines())
    assert says in " ".join(flat.split()), result.output
    return flat


# -- seed lists ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seeds", "says"),
    [
        ("5-2", "seed range '5-2' is empty"),
        (",", "no seed in ','"),
        ("0-99999", "at most 10000 seeds"),
        ("99999999999", "outside the accepted range 0..4294967295"),
    ],
)
def test_bad_seed_lists_are_refused(seeds: str, says: str, tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    refused("run", f"--seeds={seeds}", "--db", db, "--schedulers", "fgd", says=says)
    assert not Path(db).exists()


# -- scheduler parameters -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("ilp-alloc/w=0", "parameter w=0 must be an integer in 1..4096"),
        ("ilp-alloc/t=-1", "parameter t=-1 must be a number in >0..3600"),
        ("ilp-frag/k=2.5", "parameter k=2.5 must be an integer in 1..4096"),
        ("ilp-alloc/w=8/w=9", "gives a parameter twice"),
    ],
)
def test_out_of_range_scheduler_parameters_are_refused(name: str, says: str) -> None:
    refused("run", "--schedulers", name, "--no-record", says=says)


# -- numbers out of range -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("run", "--jobs", "0"), "'--jobs': 0 is outside the accepted range 1..256"),
        (("run", "--target", "inf"), "'--target': inf is outside the accepted range >0..1000"),
        (("run", "--target", "nan"), "'--target': nan is outside the accepted range >0..1000"),
        (("optimum", "--at", "-5"), "'--at': -5 is outside the accepted range >0..1000"),
        (("vte", "serve", "--port", "99999"), "'--port': 99999 is outside the accepted range"),
        (("scheduler", "serve", "--port", "99999"), "'--port': 99999 is outside the accepted"),
        (("vte", "serve", "--speed", "0"), "'--speed': 0 is outside the accepted range >0.."),
        (("twin", "collect", "--interval", "0", "--once"), "'--interval': 0 is outside"),
        (("runs", "list", "--limit", "-1"), "'--limit': -1 is outside the accepted range"),
        (("runs", "show", "99999999999999999999"), "is outside the accepted range 1.."),
        (("train", "--workers", "-1"), "'--workers': -1 is outside the accepted range 0..1024"),
        (("autoscale", "--window", "0m"), "'0m' is outside the accepted range 1m..10080m"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)
def test_numbers_out_of_range_are_refused_naming_the_range(
    args: tuple[str, ...], says: str
) -> None:
    refused(*args, says=says)


# -- names --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["", " ", "a\tb"])
def test_an_empty_or_blank_scenario_name_is_refused(name: str, tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text("{}")
    db = tmp_path / "store.db"
    refused("scenarios", "import", "twin-json", str(doc), "--name", name, "--db", str(db),
            says="Invalid value for '--name'")  # fmt: skip
    assert not db.exists()


# -- paths --------------------------------------------------------------------------------------
def test_an_unwritable_out_is_refused_before_the_runs(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    db = tmp_path / "runs.db"
    out = refused("run", "--out", str(tmp_path / "afile" / "results"), "--db", str(db),
                  says="is a file, not a folder")  # fmt: skip
    assert "runs" not in out.split("Invalid value")[0]  # no progress bar: no run started
    assert not db.exists()  # nothing recorded either


def test_a_data_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    refused("run", "--data", str(tmp_path / "nowhere"), "--no-record",
            says=f"data folder '{tmp_path / 'nowhere'}' does not exist")  # fmt: skip


def test_an_empty_out_does_not_mean_the_working_folder(tmp_path: Path) -> None:
    refused("demo", "--out=", says="'' is not a path")


# -- stores -------------------------------------------------------------------------------------
URL = "postgresql://someone:secret@127.0.0.1:1/nowhere"


@pytest.mark.parametrize(
    "args", [("scenarios", "list"), ("runs", "list"), ("run", "--schedulers", "fgd")]
)
def test_a_store_that_cannot_connect_is_one_message_without_password(
    args: tuple[str, ...],
) -> None:
    out = refused(
        *args, "--db", URL, says="cannot open the store postgresql+psycopg://someone:***@"
    )
    assert "secret" not in out and "runs" not in out.split("error:")[0]


# -- model cards --------------------------------------------------------------------------------
DATA = hashlib.sha256(b"data").hexdigest()
CORRUPT = {
    "bad JSON": (lambda card: "{not json", "unreadable model card"),
    "missing field": (lambda card: json.dumps({k: v for k, v in card.items() if k != "kind"}),
                      "field 'kind': missing"),
    "wrong type": (lambda card: json.dumps(card | {"metrics": "high"}),
                   "field 'metrics': 'high' is a str, not a dict"),
}  # fmt: skip


@pytest.mark.parametrize("how", CORRUPT)
def test_a_bad_model_card_hides_no_other_model(how: str, tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path)
    registry.register("good", "k", {"f": b"1"}, {}, DATA, {"alloc_pct": 91.0})
    registry.register("bad", "k", {"f": b"2"}, {}, DATA)
    path = tmp_path / "bad" / "1" / CARD
    corrupt, says = CORRUPT[how]
    path.write_text(corrupt(json.loads(path.read_text())))
    listed = invoke("models", "list", "--models-dir", str(tmp_path))
    assert listed.exit_code == 1  # a warning row: the registry needs a look
    good = [line for line in listed.output.splitlines() if "good" in line]
    assert good and "alloc_pct=91" in good[0], listed.output
    flat = " ".join(listed.output.replace("│", " ").split())
    assert "bad 1 bad card" in flat and says in flat, listed.output
    refused("models", "show", "bad", "--models-dir", str(tmp_path), says=says)
    assert invoke("models", "show", "good", "--models-dir", str(tmp_path)).exit_code == 0
    verified = invoke("models", "verify", "--models-dir", str(tmp_path))
    flat = " ".join(verified.output.replace("│", " ").split())
    assert verified.exit_code == 1 and "good@1 ok" in flat and says in flat, verified.output
    with pytest.MonkeyPatch.context() as env:  # loading it as a scheduler: the same message
        env.setenv("TWINSCHED_MODELS", str(tmp_path))
        refused("run", "--schedulers", "ai:bad", "--no-record", says=says)
    bad = registry.scan()[1]
    assert [(getattr(e, "path", None), getattr(e, "field", "")) for e in bad] == [
        (path, CORRUPT_FIELD[how])
    ]


CORRUPT_FIELD = {"bad JSON": None, "missing field": "kind", "wrong type": "metrics"}
