#!/usr/bin/env bash
# Browser test of the run page's Incidents section: a real store with a hung run and a diverged
# one (baton_alerts_fixture), `baton serve` recording their incidents and delivering them to two
# webhook sinks, one a receiver on 127.0.0.1 (tests/orchestrator/alert_receiver.py) and one a
# closed port (its deliveries stay pending with an error), then headless chromium
# (browser_incidents_test.cjs) checks what the page shows against the API. Leaves a screenshot in
# ARTIFACTS_DIR.
#   browser_incidents_test.sh BATON ALERTS_FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
test_name=browser_incidents_test
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"
browser_setup
mkdir -p "$artifacts"
db=$BATON_HOME/baton.db

python3 "$here/../orchestrator/alert_receiver.py" "$tmp/port" "$tmp/received" "$tmp/fail" &
track_pid $!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "browser_incidents_test: the receiver did not start"; exit 1; }
BATON_ALERT_URL="http://127.0.0.1:$(cat "$tmp/port")/hook/s3cr3t"
export BATON_ALERT_URL
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export BATON_DOWN_URL="http://127.0.0.1:$closed/hook"
cat >"$BATON_HOME/alerts.yaml" <<YAML
sinks:
  - {name: lab, type: webhook, url: env:BATON_ALERT_URL, timeout_s: 2}
  - {name: down, type: webhook, url: env:BATON_DOWN_URL, timeout_s: 1}
subscribe: [hang, diverged, failed]
YAML
hung=$("$fixture" "$db" run hung)
"$fixture" "$db" attempt "$hung" 100 hang
broken=$("$fixture" "$db" run broken)
"$fixture" "$db" attempt "$broken" 200 diverged
"$fixture" "$db" status "$broken" FAILED

start_serve --no-reconcile --interval 0.5
# Every incident's lab delivery confirmed and every down one tried (and failed) once at least.
delivered() {
  "$baton" incidents --json | jq -e 'length == 3 and all(.[]; any(.deliveries[]; .sink == "lab" and .state == "sent")
    and any(.deliveries[]; .sink == "down" and .state == "pending" and .tries >= 1 and (.last_error | length) > 0))' >/dev/null
}
for _ in $(seq 1 200); do delivered && break; sleep 0.1; done
delivered || { echo "browser_incidents_test: deliveries not done: $("$baton" incidents --json)"; exit 1; }

BASE_URL=$url HUNG_RUN=$hung BROKEN_RUN=$broken PW_NODE_MODULES=$node_modules CHROMIUM=$chromium \
  ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile node "$here/browser_incidents_test.cjs"
