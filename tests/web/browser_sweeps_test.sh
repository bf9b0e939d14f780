#!/usr/bin/env bash
# Browser test of the sweeps pages: the fixture's six-member sweep (baton_web_fixture --sweep,
# through the real ingest path), `baton serve` on a free port, then headless chromium
# (browser_sweeps_test.cjs). Leaves screenshots in ARTIFACTS_DIR.
#   browser_sweeps_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
test_name=browser_sweeps_test
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"
browser_setup
mkdir -p "$artifacts"
ids=$("$fixture" --db "$BATON_HOME/baton.db" --runs-root "$tmp/runs" --no-compare --sweep)
echo "fixture: $ids"

start_serve --no-reconcile --interval 1

BASE_URL=$url FIXTURE_IDS=$ids PW_NODE_MODULES=$node_modules CHROMIUM=$chromium \
  ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile node "$here/browser_sweeps_test.cjs"
