"""Every shell command of README.md and docs/*.md is run here, or listed in LONG with a reason.

``tests/docs/test_commands.py`` parses each ``twinsched`` command without running it; this
file RUNS the cheap commands of each page, in the page's order, in one sandbox per page: a
temporary folder as working directory, ``TWINSCHED_DB`` and ``TWINSCHED_MODELS`` inside it,
``TWINSCHED_DATA`` the shared data folder, and ``twinsched`` the program of this checkout.
Each must exit with status 0. A command is known by ``"<page>: <text>"`` (comment dropped,
spaces collapsed), so a command edited, added or removed in the docs fails
:func:`test_every_documented_command_is_run_or_listed` until it is run or listed here.

What a command does before it runs here is in :data:`SUBSTITUTIONS` (small inputs for long
runs, a placeholder's value, a file the doc assumes) and, for every command,
:data:`EVERYWHERE`. Commands that start a server, need one, train for minutes or install
things are in :data:`LONG`, with the reason and (for servers) the test that covers them.
Budget: about 40 s on the 2-core build machine (measured).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.outputs import misnamed_reads, written
from tests.docs.test_commands import PAGES, ROOT, shell_lines

DATA = ROOT.parent / "shared" / "data"
TIMEOUT_S = 120
EVERYWHERE = [("../shared/data", str(DATA))]  # the doc's data root, from the repository root

# The fill-ups of the real trace stop at 40 % of its GPUs (the documented runs fill to 100 %:
# 4-5 s of CPU more each, on the 2-core build machine, for the same code; bench/docs_long.py
# runs them as substituted here)
TARGET = "--target 40"
# command -> (what it becomes here, why)
SUBSTITUTIONS: dict[str, list[tuple[str, str]]] = {
    # make would build the venv; one seed of the two (tests/cli/test_cli.py runs the same)
    "README.md: make demo": [("make demo", "twinsched demo --seeds 0")],
    "README.md: twinsched run --trace alibaba-gpu-2023 --variant default --mode fillup "
    "--schedulers fgd,bestfit,gpupacking,gpuclustering,dotprod,random --seeds 0-9 --jobs 2 "
    "--out out/fgd": [
        (
            "--schedulers fgd,bestfit,gpupacking,gpuclustering,dotprod,random",
            "--schedulers fgd,random",
        ),
        ("--seeds 0-9", f"--seeds 0 {TARGET}"),
    ],
    "README.md: twinsched run --scenario openb --schedulers fgd,bestfit --seeds 0-2": [
        ("--seeds 0-2", f"--seeds 0 {TARGET}")
    ],
    "README.md: twinsched run --trace alibaba-gpu-2023 --variant cpu072 --schedulers "
    "ai:openb-rerank,fgd,bestfit --seeds 0-2": [("--seeds 0-2", f"--seeds 0 {TARGET}")],
    "docs/ai.md: twinsched run --trace alibaba-gpu-2023 --variant cpu072 --schedulers "
    "ai:openb-rerank,fgd": [("ai:openb-rerank,fgd", f"ai:openb-rerank,fgd {TARGET}")],
    "docs/ai.md: twinsched run --trace alibaba-gpu-2023 --variant cpu235 --schedulers "
    "screened:openb-rerank,fgd --seeds 0": [("--seeds 0", f"--seeds 0 {TARGET}")],
    "docs/learning.md: twinsched agent check docs/agents/edge-autoscaler.toml": [
        (  # the file is the checkout's; check needs the token variable set
            "twinsched agent check docs/",
            f"TWINSCHED_TWIN_TOKEN=doc twinsched agent check {ROOT}/docs/",
        )
    ],
    "docs/models.md: twinsched models list [NAME]": [(" [NAME]", "")],
    "docs/models.md: twinsched models verify [NAME[@VERSION]]": [(" [NAME[@VERSION]]", "")],
    "docs/prometheus.md: cat > /tmp/prometheus.yml <<'EOF'": [
        ("/tmp/prometheus.yml", "prometheus.yml")  # into the sandbox
    ],
    "docs/store.md: twinsched scenarios import twin-json snapshot.json --name snap --replace": [
        (
            "twinsched scenarios import",  # the doc assumes a snapshot.json: export one first
            "twinsched scenarios export demo --format twin-json --out snapshot.json && "
            "twinsched scenarios import",
        )
    ],
    "docs/store.md: twinsched scenarios import decice d22.json --name decice-d22": [
        ("d22.json", f"{ROOT}/tests/twin/seeds/d22.json")  # seed-formats.md's, kept equal
    ],
    "docs/store.md: twinsched scenarios import decice training.json --name decice-rows -o "
    "lenient=yes": [("training.json", f"{ROOT}/tests/twin/seeds/training.json")],
    "docs/store.md: twinsched scenarios list | show NAME | delete NAME": [
        (
            "twinsched scenarios list | show NAME | delete NAME",  # the three alternatives
            "twinsched scenarios list && twinsched scenarios show demo && "
            "twinsched scenarios delete lublin",
        )
    ],
    "docs/store.md: twinsched scenarios export NAME --format twin-json --out NAME.json": [
        ("NAME", "demo")
    ],
    "docs/sweeps.md: twinsched sweep report fgd-study": [
        ("report fgd-study", "report example")  # the example sweep was run above; the study not
    ],
    "docs/store.md: twinsched runs list | show ID | compare ID ID... [--out DIR]": [
        (
            "twinsched runs list | show ID | compare ID ID... [--out DIR]",  # two runs first
            "twinsched run --scenario demo --schedulers fgd,bestfit --seeds 0 && "
            "twinsched runs list && twinsched runs show 1 && "
            "twinsched runs compare 1 2 --out compared",
        )
    ],
}

TWIN_SERVER = "starts a server: covered by tests/twin/test_restart.py (TwinProcess)"
NEEDS_TWIN = "needs the twin server started above: covered by tests/twin/test_routes.py"
SNAP = "needs a twin server: covered by tests/twin/test_snapshot.py (TwinProcess)"
VTE = "starts a server: covered by tests/sim/test_exporter.py::test_cli_serve_runs_to_the_end"
COLLECTOR = (
    "starts a collector against Prometheus and the twin: covered by "
    "tests/twin/test_prometheus_chain.py and tests/twin/test_prometheus.py"
)
PROMETHEUS = "needs the Prometheus server: covered by tests/twin/test_prometheus_chain.py"
TRAINING = "trains a policy for minutes; tests/training/ trains tiny ones"
NEEDS_MODEL = "needs a model registered by a training command above (long)"
BENCH = "a benchmark (minutes); bench/ never runs in the test suite"
MIX_FIT = "hundreds of fill-ups (5 to 10 minutes of CPU): tests/training/test_kinds.py fits"
WHATIF = "needs a twin server: covered by tests/cli/test_twin_whatif.py (TwinProcess)"
MONITORING = "reads the repository's files: tests/deploy/test_monitoring.py runs both"
PROMETHEUS_RANGE = "needs a Prometheus server: covered by tests/twin/test_prometheus_range.py"
BROKER = "needs NATS and a twin: covered by tests/twin/test_broker.py (real NATS, TwinProcess)"
COMPOSE = (
    "the Docker walk-through needs a Docker engine (none here): tests/deploy/test_stack.py "
    "runs the same stack under podman"
)
CONTAINERS = (
    "needs root and podman, and the shell variables of the steps before (images built in "
    "minutes): tests/deploy/test_stack.py runs these steps"
)
AIR_GAP = (
    "carries files to an air-gapped machine: the build from a given wheelhouse with "
    "--network none was run by hand (deploy/README.md)"
)
KUBERNETES = (
    "needs a Kubernetes cluster and a registry (none here): tests/deploy/test_manifests.py "
    "validates the manifests"
)
TWO_NODES = (
    "starts a two-node Ray cluster (about 20 s): tests/experiments/test_sweep.py::"
    "test_every_executor_stores_the_same_results starts one (tests/ray_cluster.py) and runs "
    "this sweep on it"
)
REAL_CLUSTER = "needs a real Ray cluster (HEAD) and its database (DBHOST)"
SHIPPED_DRIVE = (
    "needs the server above and drives the whole trace (minutes): both modes on a slice in "
    "tests/serve/test_same_decisions.py"
)
RECIPE = (  # the README's openb-gates command, also in docs/ai.md and docs/deploy.md
    "twinsched train --recipe recipes/openb-gates.toml --out out/train-gates --register openb-gates"
)
DISTIL_COMMAND = (
    "twinsched distil --recipe recipes/openb-rerank.toml --workers 2 --register openb-rerank"
)
DISTIL = (
    "the distillation recipe: 36 look-ahead fill-ups, about half an hour; "
    "tests/training/test_distil.py runs it small"
)
LONG: dict[str, str] = {
    "README.md: twinsched train --scenario openb --out out/train-openb": (
        "trains the default recipe on all of openb (a minute of CPU): "
        "tests/cli/test_stored_scenarios.py::test_train_reads_stored_scenarios trains on a stored "
        "scenario"
    ),
    "docs/store.md: twinsched train --recipe recipes/gates-from-fgd.toml --scenario sc --out "
    "out/sc": (
        "trains gates on the SuperCloud scenario (25 s of CPU): "
        "tests/cli/test_stored_scenarios.py::test_train_reads_stored_scenarios trains on a stored "
        "scenario"
    ),
    "docs/store.md: twinsched optimum --scenario openb --at 100": (
        "CP-SAT over openb's 8,289 pods (20 s of CPU with a 2 s limit): "
        "tests/cli/test_stored_scenarios.py::test_run_and_optimum_read_stored_scenarios runs the "
        "optimum on a stored scenario"
    ),
    (
        "docs/telemetry.md: twinsched run --trace synthetic-continuum --mode replay --schedulers "
        "fgd --seeds 0 --twin http://127.0.0.1:8181 --anomalies 0.002 --noise 0.02 "
        "--anomaly-labels out/anomalies"
    ): "needs a twin: covered by tests/twin/test_anomaly_injection.py (TwinProcess)",
    "docs/learning.md: twinsched agent run docs/agents/edge-autoscaler.toml --port 9465": (
        "needs a twin: covered by tests/learning/test_agent_service.py (TwinProcess)"
    ),
    "docs/telemetry.md: twinsched twin serve --port 8181 --broker nats://127.0.0.1:4222": BROKER,
    (
        "docs/telemetry.md: twinsched twin collect --prometheus http://127.0.0.1:9090 --broker "
        "nats://127.0.0.1:4222"
    ): BROKER,
    (
        "docs/telemetry.md: twinsched run --trace synthetic-continuum --schedulers fgd --twin "
        "http://127.0.0.1:8181 --broker nats://127.0.0.1:4222"
    ): BROKER,
    "docs/telemetry.md: curl -s http://127.0.0.1:8181/api/v1/broker": BROKER,
    (
        "docs/telemetry.md: twinsched collect-dataset --prometheus http://127.0.0.1:9090 --from "
        "1764000000 --to 1764086400 --step 300 --out cluster.parquet"
    ): PROMETHEUS_RANGE,
    (
        "docs/telemetry.md: twinsched collect-dataset --prometheus http://127.0.0.1:9090 --query "
        "'load=sum by (node) (rate(node_cpu_seconds_total{mode!=\"idle\"}[5m]))' --from "
        "1764000000 --to 1764086400 --out load.csv"
    ): PROMETHEUS_RANGE,
    (
        "docs/telemetry.md: twinsched vte serve --trace synthetic-continuum --broker "
        "nats://127.0.0.1:4222 --sample-every 60"
    ): BROKER,
    "docs/telemetry.md: python bench/broker.py --batches 200 --kills 5": BENCH,
    "docs/telemetry.md: python bench/predict.py": BENCH,
    "docs/data.md: python bench/data_placement.py --seeds 100,101,102,103,104": BENCH,
    "docs/data.md: python bench/workflows_controller.py": BENCH,
    (
        "docs/data.md: twinsched run --trace synthetic-continuum-data --mode replay --schedulers "
        "fgd,fgd+data --validate --no-record"
    ): "two validated replays of 2,000 pods with transfers (a minute); tests/sim/test_transfers.py "
    "checks the invariant on a small continuum",
    (
        "docs/data.md: python bench/data_placement.py --seeds 100,101 --pods 300 --median-gb 0.5"
    ): BENCH,
    (
        "docs/telemetry.md: twinsched forecast-backtest --dataset requests.csv --metric "
        "requests --node web-1 --horizon 3h"
    ): "needs a week of samples in the twin: covered by tests/twin/test_dataset.py",
    ("docs/deploy.md: git clone <this repository> twinsched && cd twinsched"): COMPOSE,
    ("docs/deploy.md: export TWINSCHED_DATA_DIR=/path/to/data"): COMPOSE,
    ("docs/deploy.md: ENGINE=docker PYTHON=python3.11 deploy/build-image.sh"): COMPOSE,
    ("docs/deploy.md: export TWINSCHED_TOKEN=$(openssl rand -hex 32)"): COMPOSE,
    ("docs/deploy.md: docker compose -f deploy/compose.yaml up -d"): COMPOSE,
    ("docs/deploy.md: docker compose -f deploy/compose.yaml ps"): COMPOSE,
    (
        "docs/deploy.md: python deploy/seed-twin.py --url http://127.0.0.1:8181 --data "
        '"$TWINSCHED_DATA_DIR"'
    ): CONTAINERS,
    ("docs/deploy.md: curl -s http://127.0.0.1:8282/readyz"): CONTAINERS,
    ("docs/deploy.md: curl -s http://127.0.0.1:9464/metrics | head"): CONTAINERS,
    ('docs/deploy.md: export TWINSCHED_SCHEDULER_TOKEN="$TWINSCHED_TOKEN"'): CONTAINERS,
    (
        "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --trace al"
        "ibaba-gpu-2023 --variant default --limit 500 --check ai:openb-rerank"
    ): CONTAINERS,
    ("docs/deploy.md: docker compose -f deploy/compose.yaml down -v"): COMPOSE,
    (
        "docs/deploy.md: sudo apt-get install --no-install-recommends podman runc netavark "
        "aardvark-dns podman-compose debootstrap"
    ): "installs Debian packages as root: .ci/test-deps installs them for make test",
    ('docs/deploy.md: set -a; eval "$(deploy/images/base.sh)"; set +a'): CONTAINERS,
    (
        'docs/deploy.md: set -a; eval "$(PYTHON_IMAGE=$TWINSCHED_PYTHON_BASE deploy/build-'
        'image.sh)"; set +a'
    ): CONTAINERS,
    ("docs/deploy.md: podman-compose -p twinsched -f deploy/compose.yaml up -d"): CONTAINERS,
    ("docs/deploy.md: deploy/wheelhouse.sh /media/transfer/wheelhouse"): AIR_GAP,
    (
        'docs/deploy.md: podman save -m -o /media/transfer/bases.tar "$TWINSCHED_PYTHON_BASE'
        '" "$TWINSCHED_POSTGRES_IMAGE" "$TWINSCHED_PROMETHEUS_IMAGE"'
    ): AIR_GAP,
    ("docs/deploy.md: podman load -i /media/transfer/bases.tar"): AIR_GAP,
    (
        "docs/deploy.md: WHEELHOUSE=/media/transfer/wheelhouse PYTHON_IMAGE=$TWINSCHED_PY"
        "THON_BASE deploy/build-image.sh"
    ): AIR_GAP,
    (
        "docs/deploy.md: docker build -f deploy/Dockerfile -t registry.example/twinsched:0.1.0 ."
    ): KUBERNETES,
    ("docs/deploy.md: docker push registry.example/twinsched:0.1.0"): KUBERNETES,
    (
        "docs/deploy.md: sed -i 's#image: twinsched:0.1.0#image: registry.example/twinsch"
        "ed:0.1.0#' deploy/kubernetes/*.yaml"
    ): KUBERNETES,
    ("docs/deploy.md: kubectl apply -f deploy/kubernetes/00-namespace.yaml"): KUBERNETES,
    (
        "docs/deploy.md: kubectl -n twinsched create secret generic twinsched-token --fro"
        'm-literal=token="$(openssl rand -hex 32)"'
    ): KUBERNETES,
    (
        "docs/deploy.md: kubectl -n twinsched create secret generic twinsched-db --from-l"
        "iteral=url='postgresql+psycopg://USER:PASSWORD@HOST:5432/twinsched'"
    ): KUBERNETES,
    ("docs/deploy.md: kubectl apply -f deploy/kubernetes/20-storage.yaml"): KUBERNETES,
    (
        "docs/deploy.md: kubectl -n twinsched run traces-loader --image=busybox:1.37 --re"
        'start=Never --overrides=\'{"spec":{"volumes":[{"name":"d","persistentVolumeClaim"'
        ':{"claimName":"twinsched-traces"}}],"containers":[{"name":"traces-loader","image'
        '":"busybox:1.37","command":["sleep","3600"],"volumeMounts":[{"name":"d","mountPa'
        'th":"/data"}]}]}}\''
    ): KUBERNETES,
    (
        'docs/deploy.md: kubectl -n twinsched cp "$TWINSCHED_DATA_DIR/alibaba_gpu_v2023" '
        "traces-loader:/data/alibaba_gpu_v2023"
    ): KUBERNETES,
    ("docs/deploy.md: kubectl -n twinsched delete pod traces-loader"): KUBERNETES,
    (
        "docs/deploy.md: kubectl apply -f deploy/kubernetes/30-twin.yaml -f deploy/kubern"
        "etes/40-scheduler-service.yaml"
    ): KUBERNETES,
    ("docs/deploy.md: kubectl apply -f deploy/kubernetes/50-kube-scheduler.yaml"): KUBERNETES,
    ("docs/deploy.md: kubectl -n twinsched rollout status deploy/twinsched-scheduler"): KUBERNETES,
    (
        "docs/deploy.md: kubectl -n twinsched rollout status deploy/twinsched-kube-scheduler"
    ): KUBERNETES,
    (
        "docs/deploy.md: kubectl -n twinsched logs deploy/twinsched-kube-scheduler | grep"
        " -i extender"
    ): KUBERNETES,
    ("docs/deploy.md: kubectl apply -f share-demo.yaml"): KUBERNETES,
    ("docs/deploy.md: kubectl get pod share-demo -o wide"): KUBERNETES,
    (
        "docs/deploy.md: kubectl -n twinsched port-forward svc/twinsched-scheduler 8282:8282 &"
    ): KUBERNETES,
    (
        "docs/deploy.md: curl -s http://127.0.0.1:8282/metrics | grep twinsched_scheduler"
        "_calls_total"
    ): COMPOSE,
    "docs/sweeps.md: twinsched sweep run sweeps/example.toml --executor ray": (
        "starts a local Ray (about 8 s): covered by "
        "tests/experiments/test_sweep.py::test_every_executor_stores_the_same_results"
    ),
    "docs/sweeps.md: twinsched sweep run sweeps/example.toml --executor ray --address "
    "127.0.0.1:6379": TWO_NODES,
    "docs/sweeps.md: ray start --head --port 6379 --num-cpus 1 --include-dashboard false "
    "--disable-usage-stats": TWO_NODES,
    "docs/sweeps.md: ray start --address 127.0.0.1:6379 --num-cpus 1 --resources "
    "'{\"second\": 1}' --disable-usage-stats": TWO_NODES,
    "docs/sweeps.md: ray status": TWO_NODES,
    "docs/sweeps.md: ray stop": (
        "stops every Ray process of the machine by name, other users' too: the test cluster "
        "is stopped by process id (tests/ray_cluster.py)"
    ),
    "docs/sweeps.md: ray start --head --port 6379 --num-cpus 0": REAL_CLUSTER,
    "docs/sweeps.md: ray start --address HEAD:6379": REAL_CLUSTER,
    "docs/sweeps.md: twinsched sweep run sweeps/fgd-study.toml --executor ray --address "
    "HEAD:6379 --db postgresql://USER@DBHOST/twinsched": REAL_CLUSTER,
    "docs/sweeps.md: twinsched sweep report fgd-study --db postgresql://USER@DBHOST/twinsched": (
        REAL_CLUSTER
    ),
    "docs/sweeps.md: twinsched train --recipe recipes/synthetic-gates.toml --executor ray "
    "--num-cpus 2 --out out/train-ray": (
        "starts a local Ray and trains (about 20 s): tests/training/test_gates.py runs a gate "
        "grid on the test Ray cluster"
    ),
    "docs/sweeps.md: python bench/tie_grid.py --variants default,cpu050 --seeds 0-1 --ray "
    "--address HEAD:6379": REAL_CLUSTER,
    "docs/sweeps.md: python bench/sweep_scaling.py": BENCH,
    "docs/sweeps.md: twinsched sweep run sweeps/example.toml --db "
    "postgresql://postgres@127.0.0.1:5432/test": (
        "writes to the shared PostgreSQL database: tests/experiments/test_sweep.py runs sweeps "
        "on a database of its own"
    ),
    "docs/sweeps.md: twinsched sweep run sweeps/fgd-study.toml --jobs 2": (
        "the whole FGD study: about 17 minutes on 2 cores (projected in docs/sweeps.md)"
    ),
    "README.md: make test": "the whole test suite (what CI runs)",
    "docs/index.md: make test": "the whole test suite (what CI runs): README.md's, word for word",
    "docs/index.md: make demo": "README.md's first command, word for word: run there",
    "docs/index.md: mkdocs serve": "serves the site until stopped: tests/docs/test_site.py "
    "builds the same site",
    "docs/index.md: mkdocs build --strict --site-dir site": "tests/docs/test_site.py builds "
    "it --strict (into a temporary folder) and checks it",
    "README.md: " + RECIPE: TRAINING,
    "README.md: twinsched run --trace alibaba-gpu-2023 --variant gpuspec20 --schedulers "
    "ai:openb-gates,fgd,bestfit --seeds 0-2": NEEDS_MODEL,
    "README.md: twinsched twin serve --port 8181 --trace synthetic-continuum": TWIN_SERVER,
    "README.md: twinsched run --trace synthetic-continuum --variant 3 --schedulers fgd --twin "
    "http://127.0.0.1:8181": NEEDS_TWIN,
    "README.md: twinsched vte serve --trace synthetic-continuum --mode replay --speed 2000 "
    "--port 9100": VTE,
    "README.md: twinsched twin collect --prometheus http://127.0.0.1:9090 --twin "
    "http://127.0.0.1:8181": COLLECTOR,
    "README.md: twinsched autoscale --trace nasa-http-1995 --window 3h --sweep --out out/nasa": (
        "LSTM forecasts and a policy sweep: 27 s here without --sweep; "
        "tests/learning/test_cli.py runs it small"
    ),
    "README.md: twinsched forecast-backtest --out out/backtest": (
        "trains LSTM forecasters: 14 s here; tests/learning/test_cli.py covers the backtest"
    ),
    "README.md: twinsched workflow run all --out out/workflows": (
        "12 WfCommons instances x 7 schedulers; tests/workflows/ runs single instances"
    ),
    "README.md: twinsched workflow run blast-chameleon-small-002 --executor ray": (
        "starts a Ray cluster; tests/workflows/ covers the executor"
    ),
    "docs/ai.md: twinsched train --recipe recipes/openb-bc.toml --out out/train --register "
    "openb-bc": TRAINING,
    "docs/ai.md: twinsched train --recipe recipes/openb-ppo.toml --out out/train-ppo": TRAINING,
    "docs/ai.md: twinsched train --recipe recipes/openb-es.toml --out out/train-es": TRAINING,
    "docs/ai.md: twinsched train --recipe recipes/openb-gates.toml --out out/train-gates": (
        TRAINING
    ),
    "docs/ai.md: python bench/heldout.py --model ai:openb-gates --seeds 0-9": BENCH,
    "docs/scheduling.md: twinsched kinds fit --out kinds.json --variant "
    "default,cpu050,gpushare40,multigpu30,gpuspec10 --members "
    "fgd,bestfit,gpupacking,gpuclustering --k 4 --seeds 0-2 --passes 2": (
        "255 fill-ups (about 13 minutes of CPU): tests/training/test_kinds.py fits on the "
        "synthetic continuum"
    ),
    "docs/scheduling.md: python bench/kinds.py --model recipes/kinds-openb.json --best fgd "
    "--singles fgd,bestfit,gpupacking,gpuclustering": BENCH,
    "docs/scheduling.md: twinsched kinds fit --out kinds-mix.json --variant "
    "default,cpu050,gpushare40,multigpu30,gpuspec10 --members "
    "fgd,ai:openb-rerank,gpupacking,gpuclustering,bestfit --k 4 --seeds 0-2 --passes 2": MIX_FIT,
    "docs/scheduling.md: twinsched kinds fit --out kinds-mix-tied-k8.json --variant "
    "default,cpu050,cpu250,gpushare40,multigpu30,gpuspec10,gpuspec25 --members "
    "fgd,ai:openb-rerank,gpupacking,bestfit --k 8 --seeds 0-2 --passes 1 --model-tied": MIX_FIT,
    "docs/scheduling.md: python bench/kinds.py --model kinds-mix-tied-k8.json --best fgd "
    "--singles fgd,ai:openb-rerank --variants "
    "default,cpu050,cpu250,gpushare40,multigpu30,gpuspec10,gpuspec25 --seeds 3-5": BENCH,
    "docs/scheduling.md: python bench/kinds.py --model kinds-mix-tied-k8.json --best fgd "
    "--singles fgd,ai:openb-rerank --seeds 10-19": BENCH,
    "docs/scheduling.md: python bench/ai.py --model perkind:kinds-mix-tied-k8.json --repeat 3": (
        BENCH
    ),
    "docs/ai.md: twinsched run --trace alibaba-gpu-2023 --variant gpushare60 --schedulers "
    "ai:openb-bc,fgd,bestfit": NEEDS_MODEL,
    "docs/ai.md: python bench/ai.py --model ai:openb-bc": BENCH,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-energy.toml "
    "--out out/train-wait-energy --register continuum-wait-energy": TRAINING,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-carbon.toml "
    "--out out/train-wait-carbon --register continuum-wait-carbon": TRAINING,
    "docs/ai.md: python bench/continuum_learned.py --seeds 10-19 "
    "--models ai:continuum-wait-energy@1,ai:continuum-wait-carbon@1": BENCH,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-energy-2.toml "
    "--out out/train-wait-energy-2 --register continuum-wait-energy": TRAINING,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-carbon-2.toml "
    "--out out/train-wait-carbon-2 --register continuum-wait-carbon": TRAINING,
    "docs/ai.md: python bench/continuum_learned.py --seeds 10-19 "
    "--models ai:continuum-wait-energy@2,ai:continuum-wait-carbon@2": BENCH,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=8/s=8/a=70 --baselines "
    "fgd --jobs 3": BENCH,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=16/s=4/a=60 --baselines "
    "fgd --variants default,cpu050 --seeds 10,11": BENCH,
    "docs/ai.md: python bench/distil_probe.py --teacher lookahead:fgd/c=4/h=16/s=4/a=70 "
    "--variants default,cpu050 --train-seeds 0-3 --test-seeds 10,11 --every 8 --data "
    "../shared/data": (
        "look-ahead rollouts and torch fits (about 40 s on a 1/8 slice); bench/ never runs in "
        "the test suite, tests/training/test_dataset.py covers the recording"
    ),
    "docs/ai.md: twinsched run --trace alibaba-gpu-2023 --variant cpu050 --schedulers "
    "lookahead:fgd,fgd": (
        "a look-ahead fill-up: minutes; tests/scheduling/test_lookahead.py runs it small"
    ),
    "docs/ai.md: " + DISTIL_COMMAND: DISTIL,
    "docs/ai.md: twinsched sweep run sweeps/retrain.toml --jobs 2": (
        "24 reranker fill-ups (minutes); tests/training/test_distil_runs.py stores a small sweep"
    ),
    "docs/ai.md: twinsched distil --recipe recipes/openb-rerank.toml --from-sweep retrain "
    "--workers 2 --register openb-rerank-dagger": (
        DISTIL + "; and replays 24 stored runs (tests/training/test_distil_runs.py: small)"
    ),
    "docs/ai.md: python bench/heldout.py --model ai:openb-rerank-dagger --baselines "
    "fgd,ai:openb-rerank --seeds 10-19 --jobs 2": BENCH,
    "docs/ai.md: python bench/ai.py --model ai:openb-rerank-dagger,ai:openb-rerank --repeat 3 "
    "--clock cpu": BENCH,
    "README.md: " + DISTIL_COMMAND: DISTIL,
    "docs/ai.md: python bench/heldout.py --model ai:openb-rerank --baselines fgd,bestfit "
    "--seeds 0-9 --jobs 2 --plot docs/img/heldout-rerank.png": BENCH,
    "docs/ai.md: python bench/ai.py --model ai:openb-rerank --repeat 3": BENCH,
    "docs/ai.md: python bench/heldout.py --model screened:openb-rerank --baselines "
    "fgd,screened:openb-rerank/t=0/c=2 --seeds 10-19 --jobs 2": BENCH,
    "docs/ai.md: python bench/ai.py --model screened:openb-rerank,screened:openb-rerank/t=0/c=2 "
    "--repeat 5 --clock cpu": BENCH,
    "docs/ai.md: python bench/heldout.py --model screened:openb-rerank/c=3/s=4/g=1 --baselines "
    "fgd --seeds 10-19 --jobs 1": BENCH,
    "docs/ai.md: python bench/ai.py --model screened:openb-rerank/c=3/s=4/g=1 --variant cpu235 "
    "--repeat 3 --clock cpu": BENCH,
    "docs/ai.md: python bench/lookahead_curve.py --variants default,cpu050 --seeds 0-1 --jobs 2 "
    "--models lookahead:fgd/c=4/h=16/s=4/a=35/g=1,lookahead:fgd/c=4/h=8/s=4/a=35/g=1,"
    "lookahead:fgd/c=4/h=16/s=4/a=50/g=1": BENCH,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=8/s=4/a=35/g=1 --baselines "
    "fgd --seeds 10-19 --jobs 2": BENCH,
    "docs/ai.md: python bench/ai.py --model lookahead:fgd/c=4/h=8/s=4/a=35/g=1 --repeat 3 "
    "--clock cpu": BENCH,
    "docs/ai.md: pip install 'twinsched[fast]'": "installs from the package index",
    "docs/ai.md: python bench/ai.py --model lookahead:fgd/c=4/h=16/s=4/a=35/g=1 --repeat 1 "
    "--clock cpu": BENCH,
    "docs/ai.md: TWINSCHED_LOOKAHEAD_COMPILED=0 python bench/ai.py --model "
    "lookahead:fgd/c=4/h=16/s=4/a=35/g=1 --repeat 1 --clock cpu": BENCH,
    "docs/ai.md: python bench/ai.py --model lookahead:fgd/c=4/h=32/s=4/a=35 --repeat 1 "
    "--clock cpu": BENCH,
    "docs/ai.md: TWINSCHED_LOOKAHEAD_COMPILED=0 python bench/ai.py --model "
    "lookahead:fgd/c=4/h=32/s=4/a=35 --repeat 1 --clock cpu": BENCH,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=16/s=4/a=35/g=1 --baselines "
    "fgd --seeds 10-19 --jobs 1": BENCH,
    "docs/deploy.md: pip install 'twinsched[serve]'": "installs from the package index",
    "docs/ai.md: " + RECIPE: TRAINING,
    "docs/deploy.md: " + RECIPE: TRAINING,
    "docs/deploy.md: twinsched twin serve --port 8181 --db sqlite:///twin.db &": TWIN_SERVER,
    "docs/deploy.md: twinsched scheduler serve --scheduler fgd --port 8282 --twin "
    "http://127.0.0.1:8181 --insecure-local": (
        "starts a server: covered by tests/serve/test_twin_source.py"
    ),
    "docs/deploy.md: twinsched scheduler serve --scheduler fgd --port 8282 --state "
    "scheduler.jsonl --insecure-local": "starts a server: covered by tests/serve/test_restart.py",
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --trace "
    "alibaba-gpu-2023 --variant default --check fgd": (
        "needs the scheduler server above: covered by tests/serve/test_same_decisions.py"
    ),
    "docs/deploy.md: TWINSCHED_MODELS=/tmp/empty twinsched scheduler serve --scheduler "
    "ai:openb-gates --port 8282 --insecure-local &": (
        "starts a server: the shipped model served from the built wheel in "
        "tests/deploy/test_wheel.py"
    ),
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --variant default "
    "--check ai:openb-gates": SHIPPED_DRIVE,
    "docs/deploy.md: TWINSCHED_MODELS=/tmp/empty twinsched scheduler serve --scheduler "
    "ai:openb-rerank --port 8282 --insecure-local &": (
        "starts a server: the shipped model served from the built wheel in "
        "tests/deploy/test_wheel.py"
    ),
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --variant default "
    "--check ai:openb-rerank": SHIPPED_DRIVE,
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --variant default "
    "--full-nodes --check ai:openb-gates": SHIPPED_DRIVE,
    "docs/learning.md: twinsched autoscale --trace nasa-http-1995 --window 3h --sweep --out "
    "out/learning/nasa": "LSTM forecasts and a policy sweep: 27 s here without --sweep",
    "docs/learning.md: twinsched autoscale --trace bank-calls-2003 --window 3h --out "
    "out/learning/bank": "LSTM forecasts: tens of seconds; tests/learning/test_cli.py runs one",
    "docs/learning.md: twinsched forecast-backtest --out out/learning/backtest": (
        "trains LSTM forecasters: 14 s here"
    ),
    "docs/learning.md: python bench/learning.py": BENCH,
    "docs/learning.md: twinsched forecast-backtest --traces nasa-http-1995 --forecasters "
    "seasonal-naive,seasonal-naive-weekly,ets,lstm,dlinear,patchtst --out out/learning/deep": (
        "trains an LSTM, DLinear and PatchTST: about 3 minutes here; "
        "tests/learning/test_deep_forecasters.py fits DLinear small"
    ),
    "docs/scheduling.md: python bench/bandit.py --node-step 8 --pod-step 16 --seeds 20-22": BENCH,
    "docs/scheduling.md: python bench/bandit.py --seeds 0-2": BENCH,
    'docs/scheduling.md: python bench/bandit.py --members "fgd|bestfit" --node-step 8 '
    "--pod-step 16 --train-seeds 0-7 --seeds 10-17": BENCH,
    'docs/scheduling.md: python bench/bandit.py --members "fgd|bestfit" --node-step 8 '
    "--pod-step 16 --train-seeds 10-17 --seeds 0-7": BENCH,
    'docs/scheduling.md: python bench/bandit.py --members "fgd|bestfit" --train-seeds 3-5 '
    "--seeds 0-2": BENCH,
    "docs/scheduling.md: twinsched run --mode replay --schedulers fgd,leastallocated,bestfit "
    "--aggregate --weights fgd=2,leastallocated=1.5": (
        "each pod goes to every member and the evaluator: about 30 s here; "
        "tests/cli/test_cli.py runs --aggregate --weights on a stored 80-pod scenario"
    ),
    "docs/models.md: twinsched run --trace alibaba-gpu-2023 --variant gpushare40 --schedulers "
    "ai:openb-bc,fgd,bestfit": NEEDS_MODEL,
    "docs/models.md: twinsched models show openb-bc@2": NEEDS_MODEL,
    "docs/models.md: twinsched models delete openb-bc@1 [--yes]": NEEDS_MODEL,
    "docs/prometheus.md: twinsched vte serve --trace synthetic-continuum --mode replay "
    "--scheduler fgd --speed 600 --port 9464 --hold 600": VTE,
    "docs/prometheus.md: curl -s http://127.0.0.1:9464/metrics | grep 'node=\"cloud-000\"'": (
        "needs the vte server above: covered by tests/sim/test_exporter.py"
    ),
    "docs/prometheus.md: apt-get install -y prometheus": "installs a system package (root)",
    "docs/prometheus.md: prometheus --config.file=/tmp/prometheus.yml "
    "--storage.tsdb.path=/tmp/prom-data --web.listen-address=127.0.0.1:9090": PROMETHEUS,
    "docs/prometheus.md: curl -s "
    "'http://127.0.0.1:9090/api/v1/query?query=twinsched_node_pods_running'": PROMETHEUS,
    "docs/prometheus.md: twinsched twin collect --prometheus http://127.0.0.1:9090 --twin "
    "http://127.0.0.1:8181 --interval 15": COLLECTOR,
    "docs/prometheus.md: curl -s http://127.0.0.1:8181/api/v1/nodes | head -c 400": NEEDS_TWIN,
    "docs/twin.md: twinsched twin serve --port 8181": TWIN_SERVER,
    "docs/twin.md: twinsched twin whatif http://127.0.0.1:8181 --schedulers fgd,bestfit "
    "--horizon 2h --seeds 0-4": WHATIF,
    "docs/twin.md: twinsched twin whatif http://127.0.0.1:8181 --schedulers fgd,bestfit,random "
    "--scenario synthetic-continuum --json": WHATIF,
    "docs/twin.md: python bench/whatif_accuracy.py": BENCH,
    "docs/twin.md: python bench/whatif_speed.py": BENCH,
    "docs/ui.md: twinsched twin serve --port 8181 --trace synthetic-continuum --variant 3 --dev": (
        "starts a server: the dashboard it serves is covered by tests/twin/test_ui_browser.py"
    ),
    (
        "docs/ui.md: twinsched run --trace synthetic-continuum --variant 3 --schedulers fgd "
        "--twin http://127.0.0.1:8181"
    ): "needs the twin server started above: covered by tests/twin/test_loop.py",
    "docs/ui.md: python bench/ui_soak.py --seconds 120": BENCH,
    "docs/explain.md: python bench/explain.py --pods 10": BENCH,
    "docs/ui.md: twinsched ui --port 8383 --db runs.db": (
        "starts a server: covered by tests/explorer/test_explorer.py"
    ),
    "docs/ui.md: promtool check rules deploy/alerts.yml": MONITORING,
    "docs/ui.md: promtool test rules tests/deploy/alerts_test.yml": MONITORING,
    "docs/twin.md: twinsched twin serve --trace synthetic-continuum": TWIN_SERVER,
    "docs/twin.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live --every 10m": SNAP,
    "docs/twin.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live": SNAP,
    "docs/twin.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live --window 6h "
    "--step 5m --metrics cpu_util,power_w": SNAP,
    "docs/twin.md: twinsched run --scenario live --mode replay --schedulers fgd,bestfit": (
        "replays the snapshot above (needs the twin): tests/twin/test_snapshot.py runs it"
    ),
    "docs/store.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live": SNAP,
    "docs/twin.md: twinsched twin serve --port 8181 --mirror http://prometheus:9090 "
    "--mirror-interval 15": (
        "a server mirroring a cluster's Prometheus (a host this machine does not have); "
        "tests/twin/test_ksm_chain.py runs the mirror against Debian's Prometheus"
    ),
    "docs/twin.md: twinsched twin serve --snapshot twin.json --db "
    "postgresql+psycopg://postgres@127.0.0.1/test": TWIN_SERVER,
    "docs/twin.md: export TWINSCHED_TWIN_TOKEN=...; twinsched twin serve --port 8181 &": (
        TWIN_SERVER
    ),
    "docs/twin.md: twinsched run --trace synthetic-continuum --variant 3 --schedulers fgd "
    "--twin http://127.0.0.1:8181": NEEDS_TWIN,
    "docs/twin.md: twinsched scheduler run --twin http://127.0.0.1:8181 --scheduler "
    '"bandit:fgd|bestfit" --port 8383 &': (
        "the controller over a twin, in the background: tests/twin/test_feeder.py runs this flow"
    ),
    "docs/twin.md: twinsched vte feed --twin http://127.0.0.1:8181 --trace synthetic-continuum "
    "--variant 5 --pods 300 --speed 2000": (
        "needs a twin and a controller over it: tests/twin/test_feeder.py (the same flow)"
    ),
    "docs/twin.md: twinsched flow run --out out/flow --trace synthetic-continuum --variant 5 "
    "--pods 0 --schedulers fgd,bestfit": (
        "starts four processes (about 20 s): tests/twin/test_flow.py runs it with 120 pods"
    ),
    "docs/twin.md: twinsched scheduler run --twin http://127.0.0.1:8181 --scheduler fgd "
    "--port 8383": (
        "the controller over a twin runs until stopped: tests/twin/test_controller.py (a twin "
        "in a thread) and tests/twin/test_controller_faults.py (real processes)"
    ),
    "docs/workflows.md: python bench/workflows_controller.py": BENCH,
    "docs/workflows.md: python bench/workflows_controller.py --inputs-on tier": BENCH,
    "docs/workflows.md: python bench/workflows_tune.py": BENCH,
    "docs/workflows.md: python bench/workflows_tune.py --weights 8,16,32,64 --slacks 0,0.15,0.3": (
        BENCH
    ),
    "docs/workflows.md: twinsched workflow run all --out out/workflows": (
        "12 WfCommons instances x 7 schedulers; tests/workflows/ runs single instances"
    ),
}


def documented() -> Iterator[tuple[str, int, str]]:
    """(page, line, command text) of every shell command; a here-document is one command."""
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        lines = list(shell_lines(page))
        i = 0
        while i < len(lines):
            number, line = lines[i]
            i += 1
            text = " ".join(re.sub(r"\s#\s.*$", "", line).split())
            if not text or text.startswith("#"):
                continue
            here = re.search(r"<<-?'?(\w+)'?", text)
            if here:
                body = []
                while i < len(lines) and lines[i][1].strip() != here.group(1):
                    body.append(lines[i][1])
                    i += 1
                i += 1
                yield name, number, text + "\n" + "\n".join(body) + "\n" + here.group(1)
            else:
                yield name, number, text


def key(page: str, text: str) -> str:
    return f"{page}: {text.splitlines()[0]}"


COMMANDS = list(documented())
KEYS = [key(page, text) for page, _, text in COMMANDS]
RUN_PAGES = sorted({page for page, _, text in COMMANDS if key(page, text) not in LONG})


def substituted(page: str, text: str) -> str:
    for old, new in [*SUBSTITUTIONS.get(key(page, text), []), *EVERYWHERE]:
        text = text.replace(old, new)
    return text


def sandbox_env(folder: Path) -> dict[str, str]:
    """This checkout's ``twinsched`` first on PATH; store, models and data set for the sandbox."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "twinsched"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m twinsched.cli "$@"\n')
    shim.chmod(0o755)
    python_dir = Path(sys.executable).parent
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{python_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT / "src"),
        "TWINSCHED_DB": f"sqlite:///{folder / 'store.db'}",
        "TWINSCHED_MODELS": str(folder / "models"),
        "TWINSCHED_DATA": str(DATA),
        "COLUMNS": "120",
    }


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_every_documented_command_is_run_or_listed() -> None:
    """LONG and SUBSTITUTIONS name only documented commands; no command is in both."""
    assert len(KEYS) >= 60, "the collector went blind"
    assert not sorted(set(LONG) - set(KEYS)), "listed in LONG but no longer documented"
    assert not sorted(set(SUBSTITUTIONS) - set(KEYS)), "substituted but no longer documented"
    assert not sorted(set(LONG) & set(SUBSTITUTIONS)), "both run and listed as long"
    for name, table in SUBSTITUTIONS.items():
        (text,) = {t for p, _, t in COMMANDS if key(p, t) == name}
        for old, _ in table:
            assert old in text, f"{name}: substitution {old!r} no longer applies"


@pytest.mark.parametrize("page", RUN_PAGES)
def test_documented_commands_run(page: str, tmp_path: Path) -> None:
    """The page's commands not in LONG, in order, in one sandbox: each exits with 0."""
    env = sandbox_env(tmp_path)
    (tmp_path / "sweeps").symlink_to(ROOT / "sweeps")  # the shipped sweep specs, as in a checkout
    (tmp_path / "recipes").symlink_to(ROOT / "recipes")  # the shipped training recipes
    ran = 0
    for name, number, text in COMMANDS:
        if name != page or key(name, text) in LONG:
            continue
        command = substituted(name, text)
        if str(DATA) in command and not DATA.exists():
            pytest.skip(f"{DATA} is not here")
        done = run(command, tmp_path, env)
        tail = (done.stdout + done.stderr)[-1500:]
        assert done.returncode == 0, f"{name}:{number}: {command}\nexit {done.returncode}\n{tail}"
        assert "Traceback" not in done.stderr, f"{name}:{number}: {command}\n{tail}"
        missing = [p for p in written(command) if not (tmp_path / p).exists()]
        assert not missing, f"{name}:{number}: {command}\ndid not write {missing}\n{tail}"
        ran += 1
    assert ran


def test_a_page_reads_the_files_its_commands_wrote() -> None:
    """A file a command reads has the name an earlier command of the page wrote it under,
    run or long (docs/telemetry.md exported requests.csv, then read requests.parquet)."""
    problems = [
        problem
        for page in sorted({p for p, _, _ in COMMANDS})
        for problem in misnamed_reads(t for p, _, t in COMMANDS if p == page)
    ]
    assert not problems


def test_a_failing_command_is_seen(tmp_path: Path) -> None:
    """The runner is not blind: a wrong command, or a failure inside a pipe, fails."""
    env = sandbox_env(tmp_path)
    assert run("twinsched run --trace no-such-trace", tmp_path, env).returncode != 0
    assert run("twinsched scenarios show nothing | head -1", tmp_path, env).returncode != 0
    assert run("twinsched scenarios list", tmp_path, env).returncode == 0
