# ruff: noqa: E501  (HOW: the documented commands as the docs test keys them, one a line)
"""The documented commands too long for the documentation test, run (minutes to hours).

    python bench/docs_long.py [--pages docs/deploy.md,...] [--timeout 3600] [--list]

``tests/docs/test_run_commands.py`` runs the cheap commands of README.md and docs/*.md and
lists the others in ``LONG``, with a reason. This script runs every page's commands in order
again, the long ones included, in the documentation test's sandbox (its ``substituted``
commands, ``sandbox_env``): a ``RUN`` command must exit with 0 and write what it says it
writes (``--out``); a ``BACKGROUND`` one (a server, a collector) is started, given
``--settle`` seconds, kept running for the page's later commands and stopped (by process
id) at the page's end, or when a later one asks for its port; a ``SKIP`` one cannot run on
one machine without root, a container engine, Kubernetes or a real cluster (its reason is
the one in ``LONG``). ``tests/docs/test_docs_long.py`` keeps :data:`HOW` naming exactly the
commands of ``LONG``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.docs.outputs import written
from tests.docs.test_run_commands import (
    COMMANDS,
    LONG,
    ROOT,
    key,
    sandbox_env,
    substituted,
)

RUN, BACKGROUND, SKIP = "run", "background", "skip"
HOW: dict[str, str] = {
    "README.md: twinsched train --scenario openb --out out/train-openb": RUN,
    "docs/store.md: twinsched train --recipe recipes/gates-from-fgd.toml --scenario sc --out out/sc": RUN,
    "docs/store.md: twinsched optimum --scenario openb --at 100": RUN,
    "docs/twin.md: twinsched flow run --out out/flow --trace synthetic-continuum --variant 5 --pods 0 --schedulers fgd,bestfit": RUN,
    "docs/store.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live": RUN,
    "docs/twin.md: python bench/whatif_accuracy.py": RUN,
    "docs/data.md: python bench/data_placement.py --seeds 100,101,102,103,104": RUN,
    "docs/data.md: python bench/workflows_controller.py": RUN,
    "docs/data.md: twinsched run --trace synthetic-continuum-data --mode replay --schedulers fgd,fgd+data --validate --no-record": RUN,
    "docs/data.md: python bench/data_placement.py --seeds 100,101 --pods 300 --median-gb 0.5": RUN,
    "docs/twin.md: python bench/whatif_speed.py": RUN,
    "docs/twin.md: twinsched run --scenario live --mode replay --schedulers fgd,bestfit": RUN,
    'docs/twin.md: twinsched scheduler run --twin http://127.0.0.1:8181 --scheduler "bandit:fgd|bestfit" --port 8383 &': BACKGROUND,
    "docs/twin.md: twinsched scheduler run --twin http://127.0.0.1:8181 --scheduler fgd --port 8383": BACKGROUND,
    "docs/twin.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live": RUN,
    "docs/twin.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live --every 10m": BACKGROUND,
    "docs/twin.md: twinsched twin snapshot http://127.0.0.1:8181 --scenario live --window 6h --step 5m --metrics cpu_util,power_w": RUN,
    "docs/twin.md: twinsched twin whatif http://127.0.0.1:8181 --schedulers fgd,bestfit --horizon 2h --seeds 0-4": RUN,
    "docs/twin.md: twinsched twin whatif http://127.0.0.1:8181 --schedulers fgd,bestfit,random --scenario synthetic-continuum --json": RUN,
    "docs/twin.md: twinsched vte feed --twin http://127.0.0.1:8181 --trace synthetic-continuum --variant 5 --pods 300 --speed 2000": RUN,
    "docs/telemetry.md: twinsched run --trace synthetic-continuum --mode replay --schedulers fgd --seeds 0 --twin http://127.0.0.1:8181 --anomalies 0.002 --noise 0.02 --anomaly-labels out/anomalies": RUN,
    "docs/learning.md: twinsched agent run docs/agents/edge-autoscaler.toml --port 9465": BACKGROUND,
    "docs/telemetry.md: twinsched twin serve --port 8181 --broker nats://127.0.0.1:4222": BACKGROUND,
    "docs/telemetry.md: twinsched twin collect --prometheus http://127.0.0.1:9090 --broker nats://127.0.0.1:4222": BACKGROUND,
    "docs/telemetry.md: twinsched run --trace synthetic-continuum --schedulers fgd --twin http://127.0.0.1:8181 --broker nats://127.0.0.1:4222": RUN,
    "docs/telemetry.md: curl -s http://127.0.0.1:8181/api/v1/broker": RUN,
    "docs/telemetry.md: twinsched collect-dataset --prometheus http://127.0.0.1:9090 --from 1764000000 --to 1764086400 --step 300 --out cluster.parquet": RUN,
    "docs/telemetry.md: twinsched collect-dataset --prometheus http://127.0.0.1:9090 --query 'load=sum by (node) (rate(node_cpu_seconds_total{mode!=\"idle\"}[5m]))' --from 1764000000 --to 1764086400 --out load.csv": RUN,
    "docs/telemetry.md: twinsched vte serve --trace synthetic-continuum --broker nats://127.0.0.1:4222 --sample-every 60": BACKGROUND,
    "docs/telemetry.md: python bench/broker.py --batches 200 --kills 5": RUN,
    "docs/telemetry.md: python bench/predict.py": RUN,
    "docs/telemetry.md: twinsched forecast-backtest --dataset requests.csv --metric requests --node web-1 --horizon 3h": RUN,
    "docs/deploy.md: git clone <this repository> twinsched && cd twinsched": SKIP,
    "docs/deploy.md: export TWINSCHED_DATA_DIR=/path/to/data": SKIP,
    "docs/deploy.md: ENGINE=docker PYTHON=python3.11 deploy/build-image.sh": SKIP,
    "docs/deploy.md: export TWINSCHED_TOKEN=$(openssl rand -hex 32)": SKIP,
    "docs/deploy.md: docker compose -f deploy/compose.yaml up -d": SKIP,
    "docs/deploy.md: docker compose -f deploy/compose.yaml ps": SKIP,
    'docs/deploy.md: python deploy/seed-twin.py --url http://127.0.0.1:8181 --data "$TWINSCHED_DATA_DIR"': SKIP,
    "docs/deploy.md: curl -s http://127.0.0.1:8282/readyz": SKIP,
    "docs/deploy.md: curl -s http://127.0.0.1:9464/metrics | head": SKIP,
    'docs/deploy.md: export TWINSCHED_SCHEDULER_TOKEN="$TWINSCHED_TOKEN"': SKIP,
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --trace alibaba-gpu-2023 --variant default --limit 500 --check ai:openb-rerank": SKIP,
    "docs/deploy.md: docker compose -f deploy/compose.yaml down -v": SKIP,
    "docs/deploy.md: sudo apt-get install --no-install-recommends podman runc netavark aardvark-dns podman-compose debootstrap": SKIP,
    'docs/deploy.md: set -a; eval "$(deploy/images/base.sh)"; set +a': SKIP,
    'docs/deploy.md: set -a; eval "$(PYTHON_IMAGE=$TWINSCHED_PYTHON_BASE deploy/build-image.sh)"; set +a': SKIP,
    "docs/deploy.md: podman-compose -p twinsched -f deploy/compose.yaml up -d": SKIP,
    "docs/deploy.md: deploy/wheelhouse.sh /media/transfer/wheelhouse": SKIP,
    'docs/deploy.md: podman save -m -o /media/transfer/bases.tar "$TWINSCHED_PYTHON_BASE" "$TWINSCHED_POSTGRES_IMAGE" "$TWINSCHED_PROMETHEUS_IMAGE"': SKIP,
    "docs/deploy.md: podman load -i /media/transfer/bases.tar": SKIP,
    "docs/deploy.md: WHEELHOUSE=/media/transfer/wheelhouse PYTHON_IMAGE=$TWINSCHED_PYTHON_BASE deploy/build-image.sh": SKIP,
    "docs/deploy.md: docker build -f deploy/Dockerfile -t registry.example/twinsched:0.1.0 .": SKIP,
    "docs/deploy.md: docker push registry.example/twinsched:0.1.0": SKIP,
    "docs/deploy.md: sed -i 's#image: twinsched:0.1.0#image: registry.example/twinsched:0.1.0#' deploy/kubernetes/*.yaml": SKIP,
    "docs/deploy.md: kubectl apply -f deploy/kubernetes/00-namespace.yaml": SKIP,
    'docs/deploy.md: kubectl -n twinsched create secret generic twinsched-token --from-literal=token="$(openssl rand -hex 32)"': SKIP,
    "docs/deploy.md: kubectl -n twinsched create secret generic twinsched-db --from-literal=url='postgresql+psycopg://USER:PASSWORD@HOST:5432/twinsched'": SKIP,
    "docs/deploy.md: kubectl apply -f deploy/kubernetes/20-storage.yaml": SKIP,
    'docs/deploy.md: kubectl -n twinsched run traces-loader --image=busybox:1.37 --restart=Never --overrides=\'{"spec":{"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"twinsched-traces"}}],"containers":[{"name":"traces-loader","image":"busybox:1.37","command":["sleep","3600"],"volumeMounts":[{"name":"d","mountPath":"/data"}]}]}}\'': SKIP,
    'docs/deploy.md: kubectl -n twinsched cp "$TWINSCHED_DATA_DIR/alibaba_gpu_v2023" traces-loader:/data/alibaba_gpu_v2023': SKIP,
    "docs/deploy.md: kubectl -n twinsched delete pod traces-loader": SKIP,
    "docs/deploy.md: kubectl apply -f deploy/kubernetes/30-twin.yaml -f deploy/kubernetes/40-scheduler-service.yaml": SKIP,
    "docs/deploy.md: kubectl apply -f deploy/kubernetes/50-kube-scheduler.yaml": SKIP,
    "docs/deploy.md: kubectl -n twinsched rollout status deploy/twinsched-scheduler": SKIP,
    "docs/deploy.md: kubectl -n twinsched rollout status deploy/twinsched-kube-scheduler": SKIP,
    "docs/deploy.md: kubectl -n twinsched logs deploy/twinsched-kube-scheduler | grep -i extender": SKIP,
    "docs/deploy.md: kubectl apply -f share-demo.yaml": SKIP,
    "docs/deploy.md: kubectl get pod share-demo -o wide": SKIP,
    "docs/deploy.md: kubectl -n twinsched port-forward svc/twinsched-scheduler 8282:8282 &": SKIP,
    "docs/deploy.md: curl -s http://127.0.0.1:8282/metrics | grep twinsched_scheduler_calls_total": SKIP,
    "docs/sweeps.md: twinsched sweep run sweeps/example.toml --executor ray": RUN,
    "docs/sweeps.md: twinsched sweep run sweeps/example.toml --executor ray --address 127.0.0.1:6379": SKIP,
    "docs/sweeps.md: ray start --head --port 6379 --num-cpus 1 --include-dashboard false --disable-usage-stats": SKIP,
    "docs/sweeps.md: ray start --address 127.0.0.1:6379 --num-cpus 1 --resources '{\"second\": 1}' --disable-usage-stats": SKIP,
    "docs/sweeps.md: ray status": SKIP,
    "docs/sweeps.md: ray stop": SKIP,
    "docs/sweeps.md: ray start --head --port 6379 --num-cpus 0": SKIP,
    "docs/sweeps.md: ray start --address HEAD:6379": SKIP,
    "docs/sweeps.md: twinsched sweep run sweeps/fgd-study.toml --executor ray --address HEAD:6379 --db postgresql://USER@DBHOST/twinsched": SKIP,
    "docs/sweeps.md: twinsched sweep report fgd-study --db postgresql://USER@DBHOST/twinsched": SKIP,
    "docs/sweeps.md: twinsched train --recipe recipes/synthetic-gates.toml --executor ray --num-cpus 2 --out out/train-ray": RUN,
    "docs/sweeps.md: python bench/tie_grid.py --variants default,cpu050 --seeds 0-1 --ray --address HEAD:6379": SKIP,
    "docs/sweeps.md: python bench/sweep_scaling.py": RUN,
    "docs/sweeps.md: twinsched sweep run sweeps/example.toml --db postgresql://postgres@127.0.0.1:5432/test": SKIP,
    "docs/sweeps.md: twinsched sweep run sweeps/fgd-study.toml --jobs 2": RUN,
    "README.md: make test": SKIP,
    "docs/index.md: make test": SKIP,
    "docs/index.md: make demo": RUN,
    "docs/index.md: mkdocs serve": BACKGROUND,
    "docs/index.md: mkdocs build --strict --site-dir site": RUN,
    "README.md: twinsched train --recipe recipes/openb-gates.toml --out out/train-gates --register openb-gates": RUN,
    "README.md: twinsched run --trace alibaba-gpu-2023 --variant gpuspec20 --schedulers ai:openb-gates,fgd,bestfit --seeds 0-2": RUN,
    "README.md: twinsched twin serve --port 8181 --trace synthetic-continuum": BACKGROUND,
    "README.md: twinsched run --trace synthetic-continuum --variant 3 --schedulers fgd --twin http://127.0.0.1:8181": RUN,
    "README.md: twinsched vte serve --trace synthetic-continuum --mode replay --speed 2000 --port 9100": BACKGROUND,
    "README.md: twinsched twin collect --prometheus http://127.0.0.1:9090 --twin http://127.0.0.1:8181": BACKGROUND,
    "README.md: twinsched autoscale --trace nasa-http-1995 --window 3h --sweep --out out/nasa": RUN,
    "README.md: twinsched forecast-backtest --out out/backtest": RUN,
    "README.md: twinsched workflow run all --out out/workflows": RUN,
    "README.md: twinsched workflow run blast-chameleon-small-002 --executor ray": RUN,
    "docs/ai.md: twinsched train --recipe recipes/openb-bc.toml --out out/train --register openb-bc": RUN,
    "docs/ai.md: twinsched train --recipe recipes/openb-ppo.toml --out out/train-ppo": RUN,
    "docs/ai.md: twinsched train --recipe recipes/openb-es.toml --out out/train-es": RUN,
    "docs/ai.md: twinsched train --recipe recipes/openb-gates.toml --out out/train-gates": RUN,
    "docs/ai.md: python bench/heldout.py --model ai:openb-gates --seeds 0-9": RUN,
    "docs/scheduling.md: twinsched kinds fit --out kinds.json --variant default,cpu050,gpushare40,multigpu30,gpuspec10 --members fgd,bestfit,gpupacking,gpuclustering --k 4 --seeds 0-2 --passes 2": RUN,
    "docs/scheduling.md: python bench/kinds.py --model recipes/kinds-openb.json --best fgd --singles fgd,bestfit,gpupacking,gpuclustering": RUN,
    "docs/scheduling.md: twinsched kinds fit --out kinds-mix.json --variant default,cpu050,gpushare40,multigpu30,gpuspec10 --members fgd,ai:openb-rerank,gpupacking,gpuclustering,bestfit --k 4 --seeds 0-2 --passes 2": RUN,
    "docs/scheduling.md: twinsched kinds fit --out kinds-mix-tied-k8.json --variant default,cpu050,cpu250,gpushare40,multigpu30,gpuspec10,gpuspec25 --members fgd,ai:openb-rerank,gpupacking,bestfit --k 8 --seeds 0-2 --passes 1 --model-tied": RUN,
    "docs/scheduling.md: python bench/kinds.py --model kinds-mix-tied-k8.json --best fgd --singles fgd,ai:openb-rerank --variants default,cpu050,cpu250,gpushare40,multigpu30,gpuspec10,gpuspec25 --seeds 3-5": RUN,
    "docs/scheduling.md: python bench/kinds.py --model kinds-mix-tied-k8.json --best fgd --singles fgd,ai:openb-rerank --seeds 10-19": RUN,
    "docs/scheduling.md: python bench/ai.py --model perkind:kinds-mix-tied-k8.json --repeat 3": RUN,
    "docs/ai.md: twinsched run --trace alibaba-gpu-2023 --variant gpushare60 --schedulers ai:openb-bc,fgd,bestfit": RUN,
    "docs/ai.md: python bench/ai.py --model ai:openb-bc": RUN,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-energy.toml --out out/train-wait-energy --register continuum-wait-energy": RUN,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-carbon.toml --out out/train-wait-carbon --register continuum-wait-carbon": RUN,
    "docs/ai.md: python bench/continuum_learned.py --seeds 10-19 --models ai:continuum-wait-energy@1,ai:continuum-wait-carbon@1": RUN,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-energy-2.toml --out out/train-wait-energy-2 --register continuum-wait-energy": RUN,
    "docs/ai.md: twinsched train --recipe recipes/continuum-wait-carbon-2.toml --out out/train-wait-carbon-2 --register continuum-wait-carbon": RUN,
    "docs/ai.md: python bench/continuum_learned.py --seeds 10-19 --models ai:continuum-wait-energy@2,ai:continuum-wait-carbon@2": RUN,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=8/s=8/a=70 --baselines fgd --jobs 3": RUN,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=16/s=4/a=60 --baselines fgd --variants default,cpu050 --seeds 10,11": RUN,
    "docs/ai.md: python bench/distil_probe.py --teacher lookahead:fgd/c=4/h=16/s=4/a=70 --variants default,cpu050 --train-seeds 0-3 --test-seeds 10,11 --every 8 --data ../shared/data": RUN,
    "docs/ai.md: twinsched run --trace alibaba-gpu-2023 --variant cpu050 --schedulers lookahead:fgd,fgd": RUN,
    "docs/ai.md: python bench/lookahead_curve.py --variants default,cpu050 --seeds 0-1 --jobs 2 --models lookahead:fgd/c=4/h=16/s=4/a=35/g=1,lookahead:fgd/c=4/h=8/s=4/a=35/g=1,lookahead:fgd/c=4/h=16/s=4/a=50/g=1": RUN,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=8/s=4/a=35/g=1 --baselines fgd --seeds 10-19 --jobs 2": RUN,
    "docs/ai.md: python bench/ai.py --model lookahead:fgd/c=4/h=8/s=4/a=35/g=1 --repeat 3 --clock cpu": RUN,
    "docs/ai.md: pip install 'twinsched[fast]'": SKIP,
    "docs/ai.md: python bench/ai.py --model lookahead:fgd/c=4/h=16/s=4/a=35/g=1 --repeat 1 --clock cpu": RUN,
    "docs/ai.md: TWINSCHED_LOOKAHEAD_COMPILED=0 python bench/ai.py --model lookahead:fgd/c=4/h=16/s=4/a=35/g=1 --repeat 1 --clock cpu": RUN,
    "docs/ai.md: python bench/ai.py --model lookahead:fgd/c=4/h=32/s=4/a=35 --repeat 1 --clock cpu": RUN,
    "docs/ai.md: TWINSCHED_LOOKAHEAD_COMPILED=0 python bench/ai.py --model lookahead:fgd/c=4/h=32/s=4/a=35 --repeat 1 --clock cpu": RUN,
    "docs/ai.md: python bench/heldout.py --model lookahead:fgd/c=4/h=16/s=4/a=35/g=1 --baselines fgd --seeds 10-19 --jobs 1": RUN,
    "docs/ai.md: twinsched distil --recipe recipes/openb-rerank.toml --workers 2 --register openb-rerank": RUN,
    "README.md: twinsched distil --recipe recipes/openb-rerank.toml --workers 2 --register openb-rerank": RUN,
    "docs/ai.md: python bench/heldout.py --model ai:openb-rerank --baselines fgd,bestfit --seeds 0-9 --jobs 2 --plot docs/img/heldout-rerank.png": RUN,
    "docs/ai.md: python bench/ai.py --model ai:openb-rerank --repeat 3": RUN,
    "docs/ai.md: twinsched sweep run sweeps/retrain.toml --jobs 2": RUN,
    "docs/ai.md: twinsched distil --recipe recipes/openb-rerank.toml --from-sweep retrain --workers 2 --register openb-rerank-dagger": RUN,
    "docs/ai.md: python bench/heldout.py --model ai:openb-rerank-dagger --baselines fgd,ai:openb-rerank --seeds 10-19 --jobs 2": RUN,
    "docs/ai.md: python bench/ai.py --model ai:openb-rerank-dagger,ai:openb-rerank --repeat 3 --clock cpu": RUN,
    "docs/ai.md: python bench/heldout.py --model screened:openb-rerank --baselines fgd,screened:openb-rerank/t=0/c=2 --seeds 10-19 --jobs 2": RUN,
    "docs/ai.md: python bench/ai.py --model screened:openb-rerank,screened:openb-rerank/t=0/c=2 --repeat 5 --clock cpu": RUN,
    "docs/ai.md: python bench/heldout.py --model screened:openb-rerank/c=3/s=4/g=1 --baselines fgd --seeds 10-19 --jobs 1": RUN,
    "docs/ai.md: python bench/ai.py --model screened:openb-rerank/c=3/s=4/g=1 --variant cpu235 --repeat 3 --clock cpu": RUN,
    "docs/deploy.md: pip install 'twinsched[serve]'": SKIP,
    "docs/ai.md: twinsched train --recipe recipes/openb-gates.toml --out out/train-gates --register openb-gates": RUN,
    "docs/deploy.md: twinsched train --recipe recipes/openb-gates.toml --out out/train-gates --register openb-gates": RUN,
    "docs/deploy.md: twinsched twin serve --port 8181 --db sqlite:///twin.db &": BACKGROUND,
    "docs/deploy.md: twinsched scheduler serve --scheduler fgd --port 8282 --twin http://127.0.0.1:8181 --insecure-local": BACKGROUND,
    "docs/deploy.md: twinsched scheduler serve --scheduler fgd --port 8282 --state scheduler.jsonl --insecure-local": BACKGROUND,
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --trace alibaba-gpu-2023 --variant default --check fgd": RUN,
    "docs/deploy.md: TWINSCHED_MODELS=/tmp/empty twinsched scheduler serve --scheduler ai:openb-gates --port 8282 --insecure-local &": BACKGROUND,
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --variant default --check ai:openb-gates": RUN,
    "docs/deploy.md: TWINSCHED_MODELS=/tmp/empty twinsched scheduler serve --scheduler ai:openb-rerank --port 8282 --insecure-local &": BACKGROUND,
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --variant default --check ai:openb-rerank": RUN,
    "docs/deploy.md: twinsched scheduler drive --url http://127.0.0.1:8282 --variant default --full-nodes --check ai:openb-gates": RUN,
    "docs/learning.md: twinsched autoscale --trace nasa-http-1995 --window 3h --sweep --out out/learning/nasa": RUN,
    "docs/learning.md: twinsched autoscale --trace bank-calls-2003 --window 3h --out out/learning/bank": RUN,
    "docs/learning.md: twinsched forecast-backtest --out out/learning/backtest": RUN,
    "docs/learning.md: python bench/learning.py": RUN,
    "docs/learning.md: twinsched forecast-backtest --traces nasa-http-1995 --forecasters seasonal-naive,seasonal-naive-weekly,ets,lstm,dlinear,patchtst --out out/learning/deep": RUN,
    "docs/scheduling.md: python bench/bandit.py --node-step 8 --pod-step 16 --seeds 20-22": RUN,
    "docs/scheduling.md: python bench/bandit.py --seeds 0-2": RUN,
    'docs/scheduling.md: python bench/bandit.py --members "fgd|bestfit" --node-step 8 --pod-step 16 --train-seeds 0-7 --seeds 10-17': RUN,
    'docs/scheduling.md: python bench/bandit.py --members "fgd|bestfit" --node-step 8 --pod-step 16 --train-seeds 10-17 --seeds 0-7': RUN,
    'docs/scheduling.md: python bench/bandit.py --members "fgd|bestfit" --train-seeds 3-5 --seeds 0-2': RUN,
    "docs/scheduling.md: twinsched run --mode replay --schedulers fgd,leastallocated,bestfit --aggregate --weights fgd=2,leastallocated=1.5": RUN,
    "docs/models.md: twinsched run --trace alibaba-gpu-2023 --variant gpushare40 --schedulers ai:openb-bc,fgd,bestfit": RUN,
    "docs/models.md: twinsched models show openb-bc@2": RUN,
    "docs/models.md: twinsched models delete openb-bc@1 [--yes]": RUN,
    "docs/prometheus.md: twinsched vte serve --trace synthetic-continuum --mode replay --scheduler fgd --speed 600 --port 9464 --hold 600": BACKGROUND,
    "docs/prometheus.md: curl -s http://127.0.0.1:9464/metrics | grep 'node=\"cloud-000\"'": RUN,
    "docs/prometheus.md: apt-get install -y prometheus": SKIP,
    "docs/prometheus.md: prometheus --config.file=/tmp/prometheus.yml --storage.tsdb.path=/tmp/prom-data --web.listen-address=127.0.0.1:9090": BACKGROUND,
    "docs/prometheus.md: curl -s 'http://127.0.0.1:9090/api/v1/query?query=twinsched_node_pods_running'": RUN,
    "docs/prometheus.md: twinsched twin collect --prometheus http://127.0.0.1:9090 --twin http://127.0.0.1:8181 --interval 15": BACKGROUND,
    "docs/prometheus.md: curl -s http://127.0.0.1:8181/api/v1/nodes | head -c 400": RUN,
    "docs/twin.md: twinsched twin serve --port 8181": BACKGROUND,
    "docs/ui.md: twinsched twin serve --port 8181 --trace synthetic-continuum --variant 3 --dev": BACKGROUND,
    "docs/ui.md: twinsched run --trace synthetic-continuum --variant 3 --schedulers fgd --twin http://127.0.0.1:8181": RUN,
    "docs/ui.md: python bench/ui_soak.py --seconds 120": RUN,
    "docs/explain.md: python bench/explain.py --pods 10": RUN,
    "docs/ui.md: twinsched ui --port 8383 --db runs.db": BACKGROUND,
    "docs/ui.md: promtool check rules deploy/alerts.yml": RUN,
    "docs/ui.md: promtool test rules tests/deploy/alerts_test.yml": RUN,
    "docs/twin.md: twinsched twin serve --trace synthetic-continuum": BACKGROUND,
    "docs/twin.md: twinsched twin serve --port 8181 --mirror http://prometheus:9090 --mirror-interval 15": SKIP,
    "docs/twin.md: twinsched twin serve --snapshot twin.json --db postgresql+psycopg://postgres@127.0.0.1/test": BACKGROUND,
    "docs/twin.md: export TWINSCHED_TWIN_TOKEN=...; twinsched twin serve --port 8181 &": BACKGROUND,
    "docs/twin.md: twinsched run --trace synthetic-continuum --variant 3 --schedulers fgd --twin http://127.0.0.1:8181": RUN,
    "docs/workflows.md: python bench/workflows_controller.py": RUN,
    "docs/workflows.md: python bench/workflows_controller.py --inputs-on tier": RUN,
    "docs/workflows.md: python bench/workflows_tune.py": RUN,
    "docs/workflows.md: python bench/workflows_tune.py --weights 8,16,32,64 --slacks 0,0.15,0.3": RUN,
    "docs/workflows.md: twinsched workflow run all --out out/workflows": RUN,
}
PORT = re.compile(r"(?:--port[ =]|127\.0\.0\.1:)(\d+)")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def run_page(page: str, timeout: float, settle: float) -> list[str]:
    """The page's commands in order in one sandbox; what failed (empty: all ran)."""
    failed: list[str] = []
    background: dict[str, subprocess.Popen[bytes]] = {}  # port -> process
    with tempfile.TemporaryDirectory(prefix="docs-long-") as folder:
        cwd = Path(folder)
        env = sandbox_env(cwd)
        for link in ("sweeps", "recipes", "bench", "deploy", "docs", "tests"):
            (cwd / link).symlink_to(ROOT / link)
        try:
            for name, number, text in COMMANDS:
                if name != page:
                    continue
                how = HOW.get(key(name, text), RUN)
                if how == SKIP:
                    print(f"skip  {name}:{number}: {LONG[key(name, text)]}")
                    continue
                command = substituted(name, text).rstrip(" &")
                if how == BACKGROUND:
                    port = next(iter(PORT.findall(command)), command)
                    if port in background:
                        _stop(background.pop(port))
                    log = (cwd / f"background-{number}.log").open("ab")
                    background[port] = subprocess.Popen(
                        ["bash", "-c", command], cwd=cwd, env=env, stdout=log, stderr=log
                    )
                    time.sleep(settle)
                    print(f"start {name}:{number}: {command}")
                    continue
                started = time.perf_counter()
                done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=cwd,
                                      env=env, capture_output=True, text=True, timeout=timeout,
                                      check=False)  # fmt: skip
                missing = [p for p in written(command) if not (cwd / p).exists()]
                ok = done.returncode == 0 and not missing
                wall = time.perf_counter() - started
                print(f"{'ok' if ok else 'FAIL':5} {name}:{number} ({wall:.0f} s): {command}")
                if not ok:
                    tail = (done.stdout + done.stderr)[-1500:]
                    failed.append(f"{name}:{number}: exit {done.returncode}, missing {missing}")
                    print(tail)
        finally:
            for process in background.values():
                _stop(process)
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="", help="comma list (default: every page)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per command")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds after a start")
    parser.add_argument("--list", action="store_true", help="print HOW and exit")
    args = parser.parse_args()
    if args.list:
        for command, how in HOW.items():
            print(f"{how:10} {command}")
        return 0
    pages = args.pages.split(",") if args.pages else sorted({p for p, _, _ in COMMANDS})
    failed = [f for page in pages for f in run_page(page, args.timeout, args.settle)]
    print("\n".join(["", f"{len(failed)} failed", *failed]))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
