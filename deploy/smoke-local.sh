#!/usr/bin/env bash
# The compose stack without containers: the wheel with [twin,serve] in a fresh virtualenv,
# the three services started with the commands of compose.yaml, Prometheus with
# prometheus.yml's targets pointed at localhost. The twin's database is PGURL (a PostgreSQL
# URL; unset: a SQLite file in the scratch folder). Needs Debian's `prometheus`, and PYTHON
# with `build` (default .venv/bin/python). Prints each target's health and
# how many series Prometheus holds per job, then stops everything it started.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
pgurl="${PGURL:-$work/twin.db}"
py="${PYTHON:-$root/.venv/bin/python}"
export TWINSCHED_DATA="${TWINSCHED_DATA:-$root/../shared/data}"
token="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

"$py" -m build --wheel --outdir "$work/dist" "$root" >/dev/null
"$py" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$(ls "$work"/dist/twinsched-*.whl)[twin,serve]"
bin="$work/venv/bin/twinsched"

TWINSCHED_TWIN_DB="$pgurl" TWINSCHED_TWIN_TOKEN="$token" "$bin" twin serve --host 127.0.0.1 \
  --port 18181 --trace alibaba-gpu-2023 --log-level warning >"$work/twin.log" 2>&1 &
pids+=($!)
TWINSCHED_SCHEDULER_TOKEN="$token" "$bin" scheduler serve --scheduler fgd --host 127.0.0.1 \
  --port 18282 --state "$work/scheduler.jsonl" >"$work/scheduler.log" 2>&1 &
pids+=($!)
"$bin" vte serve --trace alibaba-gpu-2023 --mode replay --scheduler fgd --speed 600 \
  --host 127.0.0.1 --port 19464 --hold 3600 >"$work/vte.log" 2>&1 &
pids+=($!)
sed -e 's/twin:8181/127.0.0.1:18181/; s/scheduler:8282/127.0.0.1:18282/; s/vte:9464/127.0.0.1:19464/' \
  -e 's/scrape_interval: [0-9]*s/scrape_interval: 2s/' "$root/deploy/prometheus.yml" >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address=127.0.0.1:19090 >"$work/prometheus.log" 2>&1 &
pids+=($!)

sleep "${WAIT_S:-25}"
for url in 18181/readyz 18282/healthz 19464/metrics; do
  echo "$url: $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$url")"
done
curl -s http://127.0.0.1:19090/api/v1/targets | python3 -c '
import json, sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    print(t["labels"]["job"], t["health"], t.get("lastError", ""))'
for job in twinsched-twin twinsched-scheduler twinsched-vte; do
  curl -s http://127.0.0.1:19090/api/v1/query --data-urlencode "query=count({job=\"$job\"})" |
    python3 -c "import json, sys; r = json.load(sys.stdin)['data']['result']; print('$job series:', r[0]['value'][1] if r else 0)"
done
