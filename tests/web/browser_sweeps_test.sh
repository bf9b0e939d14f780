#!/usr/bin/env bash
# Browser test of the sweeps pages: the fixture's six-member sweep (baton_web_fixture --sweep,
# through the real ingest path), `baton serve` on a free port, then headless chromium
# (browser_sweeps_test.cjs). Leaves screenshots in ARTIFACTS_DIR.
#   browser_sweeps_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
chromium=${BATON_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "browser_sweeps_test: $chromium not found (apt-get install chromium)"; exit 1; }
[ -d "$node_modules/playwright-core" ] || { echo "browser_sweeps_test: $node_modules/playwright-core missing (build target baton_web_test_npm)"; exit 1; }

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME" "$artifacts"
ids=$("$fixture" --db "$BATON_HOME/baton.db" --runs-root "$tmp/runs" --no-compare --sweep)
echo "fixture: $ids"

"$baton" serve --port 0 --no-reconcile --interval 1 >"$tmp/serve.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/serve.log" | head -1 || true)
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "browser_sweeps_test: baton serve did not start"; cat "$tmp/serve.log"; exit 1; }

BASE_URL=$url FIXTURE_IDS=$ids PW_NODE_MODULES=$node_modules CHROMIUM=$chromium \
  ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile node "$here/browser_sweeps_test.cjs"
