#!/usr/bin/env bash
# GET /metrics on `baton serve`: authenticated like the API, OpenMetrics text that Debian's
# `promtool check metrics` accepts, with the run's labels and figures; then a real Prometheus
# started here on 127.0.0.1 scrapes it and its query API returns the run's last step. A run with
# eval results has its latest eval loss and step.
# promtool and prometheus come unpacked from Debian's package (scripts/fetch_prometheus.sh);
# without them the test is skipped (exit 77).
# usage: metrics_test.sh BATON FIXTURE SOURCE_DIR
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
fixture=$2
src=$3
bin=$(bash "$src/scripts/fetch_prometheus.sh" 2>"$tmp/fetch.err") || {
  echo "SKIP: no promtool: $(cat "$tmp/fetch.err")"
  exit 77
}
export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME"
db=$BATON_HOME/baton.db
serve_pid=
prom_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

r1=$("$fixture" "$db" run 'we"ird\name')
"$fixture" "$db" attempt "$r1" 100 hang
"$fixture" "$db" attempt "$r1" 101 preempted
"$fixture" "$db" step "$r1"
"$fixture" "$db" eval "$r1" 10 0.875
"$fixture" "$db" eval "$r1" 20 0.625
r2=$("$fixture" "$db" run done)
"$fixture" "$db" attempt "$r2" 200 completed
"$fixture" "$db" status "$r2" COMPLETED

token=metrics-token-$RANDOM
"$baton" serve --port 0 --no-reconcile --interval 0.5 --token "$token" >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
for ((i = 0; i < 100; i++)); do grep -q 'http://' "$tmp/serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*/' "$tmp/serve.out" | head -1)
[ -n "$url" ] || fail "serve did not start: $(cat "$tmp/serve.err")"
port=$(printf '%s' "$url" | sed 's|.*:\([0-9]*\)/|\1|')

code=$(curl -s -o /dev/null -w '%{http_code}' "${url}metrics")
[ "$code" = 401 ] || fail "/metrics without the token answered $code, expected 401"
checks=$((checks + 1))
curl -sf -D "$tmp/headers" -H "Authorization: Bearer $token" "${url}metrics" >"$tmp/metrics" ||
  fail "/metrics with the token failed"
expect_in "$(cat "$tmp/headers")" "application/openmetrics-text; version=1.0.0"
"$bin/promtool" check metrics <"$tmp/metrics" >"$tmp/promtool.out" 2>&1 ||
  fail "promtool check metrics refused the answer: $(cat "$tmp/promtool.out")"
checks=$((checks + 1))
m=$(cat "$tmp/metrics")
expect_in "$m" "baton_run_last_step{run=\"$r1\",name=\"we\\\"ird\\\\name\",owner=\"alice\",cluster=\"dev\",partition=\"\"} 13"
expect_in "$m" "baton_run_hangs{run=\"$r1\""
expect_in "$m" "baton_run_attempts{run=\"$r2\",name=\"done\",owner=\"alice\",cluster=\"dev\",partition=\"\",cause=\"completed\"} 1"
# The latest eval result (the highest evaluated step) and its loss, labelled like the others.
expect_in "$m" "baton_run_eval_loss{run=\"$r1\",name=\"we\\\"ird\\\\name\",owner=\"alice\",cluster=\"dev\",partition=\"\"} 0.625"
expect_in "$m" "baton_run_eval_step{run=\"$r1\",name=\"we\\\"ird\\\\name\",owner=\"alice\",cluster=\"dev\",partition=\"\"} 20"
printf '%s\n' "$m" | grep -q "^baton_run_eval_loss{run=\"$r2\"" && fail "run $r2 has no eval, yet a baton_run_eval_loss sample"
expect_in "$m" "baton_serve_pass_seconds "
# ETTR per run: productive seconds over the wall since submit, a ratio in [0, 1].
ettr=$(printf '%s\n' "$m" | sed -n "s/^baton_run_ettr{run=\"$r2\",.*} //p")
[ -n "$ettr" ] || fail "no baton_run_ettr sample for run $r2: $(grep ettr "$tmp/metrics")"
awk -v x="$ettr" 'BEGIN { exit !(x >= 0 && x <= 1) }' || fail "baton_run_ettr of run $r2 is $ettr, not in [0, 1]"
[ "$(tail -1 "$tmp/metrics")" = "# EOF" ] || fail "the answer does not end with # EOF"
checks=$((checks + 1))

# A real Prometheus scrapes it (OpenMetrics negotiated) and answers the last step.
printf '%s\n' "$token" >"$tmp/token"
cat >"$tmp/prometheus.yml" <<YAML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: baton
    authorization: {credentials_file: $tmp/token}
    static_configs: [{targets: ["127.0.0.1:$port"]}]
YAML
prom_port=$((20000 + RANDOM % 20000))
"$bin/prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$tmp/prom.log" 2>&1 &
prom_pid=$!
value=
for ((i = 0; i < 300; i++)); do
  value=$(curl -sf "http://127.0.0.1:$prom_port/api/v1/query?query=baton_run_last_step%7Brun%3D%22$r1%22%7D" |
    jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true)
  [ -n "$value" ] && break
  sleep 0.1
done
[ "$value" = 13 ] || fail "Prometheus answered '$value' for the run's last step, expected 13: $(tail -5 "$tmp/prom.log")"
checks=$((checks + 1))
echo "metrics_test: $checks checks passed"
