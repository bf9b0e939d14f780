#!/usr/bin/env bash
# Browser test of the run page's write actions: a small fixture database whose live run is
# alice's and has no job (so its cancel never reaches the shared SLURM cluster), tokens for alice
# and bob, `baton serve --auth tokens` on a free port, then headless chromium
# (browser_actions_test.cjs). Leaves a screenshot in ARTIFACTS_DIR.
#   browser_actions_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
test_name=browser_actions_test
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"
browser_setup
mkdir -p "$artifacts"
db=$BATON_HOME/baton.db
"$fixture" --db "$db" --runs-root "$tmp/runs" --no-compare >/dev/null
run=$(sqlite3 "$db" "SELECT id FROM runs WHERE status = 'RUNNING' ORDER BY id LIMIT 1")
sqlite3 "$db" "UPDATE runs SET owner = 'alice', job_id = '' WHERE id = $run"
alice=$("$baton" token add alice --json | jq -r .token)
bob=$("$baton" token add bob --json | jq -r .token)

start_serve --no-reconcile --interval 1 --auth tokens

BASE_URL=$url RUN_ID=$run ALICE_TOKEN=$alice BOB_TOKEN=$bob PW_NODE_MODULES=$node_modules \
  CHROMIUM=$chromium ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile \
  node "$here/browser_actions_test.cjs"
