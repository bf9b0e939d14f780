#!/usr/bin/env bash
# Browser test of the web UI: fills a temp database through the real ingest path
# (baton_web_fixture), starts `baton serve` on a free port, and drives Debian's headless
# chromium with playwright-core (browser_test.cjs). Leaves screenshots in ARTIFACTS_DIR.
#   browser_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
test_name=browser_test
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"
browser_setup
mkdir -p "$artifacts"
# A run of ~1 M step rows for the page-load check (BATON_BROWSER_BIG_SCALE=0 leaves it out).
ids=$("$fixture" --db "$BATON_HOME/baton.db" --runs-root "$tmp/runs" --extra-runs 3 \
  --big-scale "${BATON_BROWSER_BIG_SCALE:-1667}")
echo "fixture: $ids"

# The demo run's attempt table as the CLI prints it: the page and the API must number its
# attempts and steps the same way (browser_test.cjs, "one numbering").
demo_id=$(jq -r .demo_run_id <<<"$ids")
cli_attempts=$("$baton" attempts "$demo_id" --no-sync)

start_serve --no-reconcile --interval 1
echo "serving at $url"

BASE_URL=$url FIXTURE_IDS=$ids CLI_ATTEMPTS=$cli_attempts PW_NODE_MODULES=$node_modules CHROMIUM=$chromium \
  ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile node "$here/browser_test.cjs"
