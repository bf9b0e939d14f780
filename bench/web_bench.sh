#!/usr/bin/env bash
# Web UI bench: a run with ~1 million step rows (the demo run's 3 attempts scaled ×1429, filled
# through the real ingest path) and 1000 runs in all. Prints the series endpoint's latency and
# payload at max_points 2000, and the runs page's latency over 1000 runs.
#   bench/web_bench.sh [BUILD_DIR]     (default build/; needs baton and baton_web_fixture built)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
build=${1:-build}
baton=$build/orchestrator/baton
fixture=$build/tests/web/baton_web_fixture
for b in "$baton" "$fixture"; do
  [ -x "$b" ] || { echo "web_bench: $b missing: bash scripts/build.sh first"; exit 1; }
done
repeats=${BATON_BENCH_REPEATS:-10}

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME"

echo "== filling the database through event files + ingest (1 run × ~1M step rows, 999 small runs)"
t0=$(date +%s.%N)
ids=$("$fixture" --db "$BATON_HOME/baton.db" --runs-root "$tmp/runs" --scale 1429 --extra-runs 998)
t1=$(date +%s.%N)
echo "   $ids"
printf '   fill + ingest: %.1f s; database %s\n' "$(python3 -c "print($t1 - $t0)")" "$(du -h "$BATON_HOME/baton.db" | cut -f1)"
demo=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["demo_run_id"])' "$ids")

"$baton" serve --port 0 --no-reconcile --interval 3600 >"$tmp/serve.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 300); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/serve.log" | head -1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$tmp/serve.log"; exit 1; }
# The first sync pass ingests every run once (nothing new here); wait for it to finish.
sleep 2

echo "== series endpoint, run $demo, max_points 2000 ($repeats requests each, after one warm-up)"
python3 bench/web/measure.py "$url" "$repeats" \
  "/api/runs/$demo/series?keys=lr,loss&max_points=2000" \
  "/api/runs/$demo/series?keys=lr,expected_lr,loss,loss_video,loss_action,grad_norm,tokens_per_s,step_time_s,padding&max_points=2000" \
  "/api/runs/$demo/series?keys=lr,loss&max_points=2000&superseded=1" \
  "/api/runs/$demo"
echo "== runs page over 1000 runs"
python3 bench/web/measure.py "$url" "$repeats" \
  "/api/runs?limit=50" \
  "/api/runs?limit=50&sort=last_loss&order=asc" \
  "/api/runs?limit=50&offset=950&sort=progress" \
  "/api/runs?limit=1000"
