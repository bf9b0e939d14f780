#!/usr/bin/env bash
# Web UI bench: a run with ~1 million step rows (the demo run's 3 attempts scaled ×1429, filled
# through the real ingest path) and 1000 runs in all. Prints the ingest rate with and without the
# series rollups (the same fill twice), the series endpoint's latency on the rollup path side by
# side with the row path (source=rows, what every request did before) after checking both give
# the same points, the run page's other requests, a zoomed range, and the runs page over 1000
# runs, and a real request answered while many idle connections are open (slow clients).
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

scale=${BATON_BENCH_SCALE:-1429}
fill() {  # fill DB RUNS_ROOT [--no-rollups]: prints seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$fixture" --db "$1" --runs-root "$2" --scale "$scale" --extra-runs 998 --no-compare ${3:-} >"$tmp/ids.json"
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
echo "== ingest rate: the same fill (1 run × ~1M step rows, 999 small runs) without and with rollups"
s_without=$(fill "$tmp/no_rollups.db" "$tmp/runs_no_rollups" --no-rollups)
rm -f "$tmp/no_rollups.db"*; rm -rf "$tmp/runs_no_rollups"
s_with=$(fill "$BATON_HOME/baton.db" "$tmp/runs")
ids=$(cat "$tmp/ids.json")
echo "   $ids"
rows=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["step_rows"] + 998 * 20)' "$ids")
python3 - "$s_without" "$s_with" "$rows" <<'PY'
import sys
without, with_, rows = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
print(f"   without rollups: {without:6.1f} s = {rows / without:9,.0f} step rows/s")
print(f"   with rollups:    {with_:6.1f} s = {rows / with_:9,.0f} step rows/s"
      f"   ({100 * (1 - without / with_):.1f} % slower; the issue allows 25 %)")
PY
printf '   database %s\n' "$(du -h "$BATON_HOME/baton.db" | cut -f1)"
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

all_keys=lr,expected_lr,loss,loss_video,loss_action,grad_norm,tokens_per_s,step_time_s,padding
echo "== series endpoint, run $demo, max_points 2000: rollups vs rows ($repeats requests each, after one warm-up)"
python3 bench/web/compare_paths.py "$url" "$repeats" \
  "/api/runs/$demo/series?keys=lr,loss&max_points=2000" \
  "/api/runs/$demo/series?keys=$all_keys&max_points=2000" \
  "/api/runs/$demo/series?keys=lr,loss&max_points=2000&superseded=1" \
  "/api/runs/$demo/series?keys=$all_keys&max_points=2000&from=500000&to=501999"
echo "== the run page's other requests"
python3 bench/web/measure.py "$url" "$repeats" \
  "/api/runs/$demo" \
  "/api/runs/$demo/attempts?limit=1000" \
  "/api/runs/$demo/profile"
echo "== runs page over 1000 runs"
python3 bench/web/measure.py "$url" "$repeats" \
  "/api/runs?limit=50" \
  "/api/runs?limit=50&sort=last_loss&order=asc" \
  "/api/runs?limit=50&offset=950&sort=progress" \
  "/api/runs?limit=1000"
echo "== metrics with 1000 runs (GET /metrics: the active runs plus the 100 most recently ended)"
python3 bench/web/measure.py --line "metrics with 1000 runs" "$url" "$repeats" "/metrics"
echo "== slow clients: idle connections from one address (127.0.0.2) while a real request comes"
for n in 64 256; do python3 bench/web/slow_clients.py "$url" "$n" "/api/runs?limit=50"; done
