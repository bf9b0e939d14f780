#!/usr/bin/env bash
# Browser test of the nodes page (#/nodes, GET /api/nodes): a fixture database whose first run's
# folder gets incident files as the launcher writes them — two SIGBUS on node-b (baton excludes
# it), one hang on node-a (one incident: not excluded), evidence carrying markup — read into the
# ledger by `baton nodes`, and node-c excluded by hand (`baton nodes exclude`). Then `baton serve`
# on a free port and headless chromium (browser_nodes_test.cjs). Leaves a screenshot in
# ARTIFACTS_DIR.
#   browser_nodes_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
test_name=browser_nodes_test
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"
browser_setup
export BATON_NODES_CONFIG=$tmp/nodes.yaml  # none: the default policy
mkdir -p "$artifacts"
db=$BATON_HOME/baton.db
"$fixture" --db "$db" --runs-root "$tmp/runs" --no-compare >/dev/null
run=$(sqlite3 "$db" "SELECT id FROM runs ORDER BY id LIMIT 1")
run_dir=$(sqlite3 "$db" "SELECT run_dir FROM runs WHERE id = $run")
mkdir -p "$run_dir/nodes"
now=$(date +%s)
incident() { # incident JOB RESTART HOST KIND RANK EVIDENCE
  jq -n --arg job "$1" --argjson restart "$2" --arg host "$3" --arg kind "$4" --argjson rank "$5" \
    --arg ev "$6" --argjson at "$now" \
    '{job_id: $job, restart_count: $restart, in_job_seq: 0, rank: $rank, host: $host, kind: $kind,
      source: "launcher", evidence: $ev, at: $at}' \
    >"$run_dir/nodes/incident-$1.$2.0.$3.$4.json"
}
incident 4242 0 node-b signal 0 'the trainer was killed by Bus error <img src=x onerror="window.pwned=1">'
incident 4242 1 node-b signal 1 'the trainer was killed by Bus error'
incident 4242 2 node-a hang 1 'rank 1 heartbeat stale in micro-step at step 120 for 31 s'
"$baton" nodes >/dev/null 2>"$tmp/nodes.err" || { cat "$tmp/nodes.err"; exit 1; }
"$baton" nodes exclude node-c --for 6h --reason "fan failure reported by the admins" >/dev/null
"$baton" nodes --json --no-sync >"$tmp/nodes.json"
[ "$(jq -r '.[] | select(.host == "node-b") | .status' "$tmp/nodes.json")" = excluded ] ||
  { echo "browser_nodes_test: the fixture did not exclude node-b: $(cat "$tmp/nodes.json")"; exit 1; }

start_serve --no-reconcile --interval 1

BASE_URL=$url RUN_ID=$run HAND_USER=$(id -un) PW_NODE_MODULES=$node_modules CHROMIUM=$chromium \
  ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile node "$here/browser_nodes_test.cjs"
