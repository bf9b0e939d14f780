#!/usr/bin/env bash
# Browser test of the run page's write actions: a small fixture database whose live run is
# alice's and has no job (so its cancel never reaches the shared SLURM cluster), tokens for alice
# and bob, `baton serve --auth tokens` on a free port, then headless chromium
# (browser_actions_test.cjs). Leaves a screenshot in ARTIFACTS_DIR.
#   browser_actions_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
chromium=${BATON_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "browser_actions_test: $chromium not found (apt-get install chromium)"; exit 1; }

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME" "$artifacts"
db=$BATON_HOME/baton.db
"$fixture" --db "$db" --runs-root "$tmp/runs" --no-compare >/dev/null
run=$(sqlite3 "$db" "SELECT id FROM runs WHERE status = 'RUNNING' ORDER BY id LIMIT 1")
sqlite3 "$db" "UPDATE runs SET owner = 'alice', job_id = '' WHERE id = $run"
alice=$("$baton" token add alice --json | jq -r .token)
bob=$("$baton" token add bob --json | jq -r .token)

"$baton" serve --port 0 --no-reconcile --interval 1 --auth tokens >"$tmp/serve.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/serve.log" | head -1 || true)
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "browser_actions_test: baton serve did not start"; cat "$tmp/serve.log"; exit 1; }

BASE_URL=$url RUN_ID=$run ALICE_TOKEN=$alice BOB_TOKEN=$bob PW_NODE_MODULES=$node_modules \
  CHROMIUM=$chromium ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile \
  node "$here/browser_actions_test.cjs"
