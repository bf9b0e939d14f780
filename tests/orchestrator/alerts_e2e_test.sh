#!/usr/bin/env bash
# Alerts end to end: a real store, `baton serve` (no SLURM) delivering through its outbox to a
# webhook receiver written here (alert_receiver.py) and to email through a sendmail script that
# records its stdin. Checks one message per incident and sink, a follow-up when the outcome
# changes, retries while the receiver answers 500 and nothing delivered twice once confirmed,
# the Baton-Incident header equal to the body's key, the message's content, and the webhook
# URL's secret in no file of $BATON_HOME and no log. Then the bad input of docs/bad_input.md.
# usage: alerts_e2e_test.sh BATON FIXTURE
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
fixture=$2
here=$(cd "$(dirname "$0")" && pwd)
export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME" "$tmp/mail"
db=$BATON_HOME/baton.db

python3 "$here/alert_receiver.py" "$tmp/port" "$tmp/received" "$tmp/fail" &
receiver=$!
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  kill "$receiver" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
for ((i = 0; i < 100; i++)); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || fail "the receiver did not start"
secret="s3cr3t$RANDOM$RANDOM"
export BATON_ALERT_URL="http://127.0.0.1:$(cat "$tmp/port")/hook/$secret"

cat >"$tmp/sendmail" <<SH
#!/bin/sh
# records the mail on stdin and the arguments, as sendmail -t -oi would take them
f=\$(mktemp "$tmp/mail/m.XXXXXX")
echo "args: \$*" >"\$f"
cat >>"\$f"
SH
chmod +x "$tmp/sendmail"
cat >"$BATON_HOME/alerts.yaml" <<YAML
sinks:
  - {name: lab, type: webhook, url: env:BATON_ALERT_URL, timeout_s: 2}
  - {name: oncall, type: email, to: ml-oncall@example.org, sendmail: $tmp/sendmail}
subscribe: [hang, diverged, failed, budget_spent]
stall_s: 3600
public_url: http://baton.example/
YAML

# r1 hangs (then recovers), r2 diverges and fails, r3 is preempted three times and completes
# (not subscribed: no message).
r1=$("$fixture" "$db" run hung)
"$fixture" "$db" attempt "$r1" 100 hang
r2=$("$fixture" "$db" run broken)
"$fixture" "$db" attempt "$r2" 200 diverged
"$fixture" "$db" status "$r2" FAILED
r3=$("$fixture" "$db" run clean)
for j in 301 302 303; do "$fixture" "$db" attempt "$r3" "$j" preempted; done
"$fixture" "$db" status "$r3" COMPLETED

touch "$tmp/fail"  # the receiver is down (500) at first
"$baton" serve --port 0 --no-reconcile --interval 0.2 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

# webhook_state KEY: the lab sink's delivery state of the message KEY ("" when not queued).
incidents() { "$baton" incidents --json 2>/dev/null || echo '[]'; }
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
  local n=$(($1 * 10)); shift
  for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
  return 1
}
tried_while_down() {
  [ "$(incidents | jq '[.[] | .deliveries[] | select(.sink == "lab" and .tries >= 1 and .state == "pending")] | length')" -ge 3 ]
}
wait_for 30 tried_while_down || fail "no failed tries while the receiver was down: $(incidents)"
checks=$((checks + 1))
expect_in "$(cat "$tmp/serve.err")" "not delivered, will retry"

# r1 restarts and makes a step: its hang recovered, a follow-up is due.
"$fixture" "$db" resume "$r1" 101
"$fixture" "$db" step "$r1"
recovered() { [ "$(incidents | jq --argjson r "$r1" '[.[] | select(.run_id == $r and .kind == "hang" and .outcome == "recovered")] | length')" = 1 ]; }
wait_for 20 recovered || fail "the hang did not recover: $(incidents)"
checks=$((checks + 1))

rm -f "$tmp/fail"  # the receiver is back
all_sent() { [ "$(incidents | jq '[.[] | .deliveries[] | select(.state != "sent")] | length')" = 0 ]; }
wait_for 60 all_sent || fail "deliveries still pending after the receiver came back: $(incidents)"
checks=$((checks + 1))
kill "$serve_pid"; wait "$serve_pid" || true; serve_pid=

# A restarted serve re-sends nothing that was confirmed.
"$baton" serve --port 0 --no-reconcile --interval 0.2 >>"$tmp/serve.out" 2>>"$tmp/serve.err" &
serve_pid=$!
sleep 3
# The run page's source: the run's incidents with their deliveries.
url=$(grep -o 'http://[^ ]*/' "$tmp/serve.out" | tail -1)
api=$(curl -sf "${url}api/runs/$r1/incidents") || fail "GET /api/runs/$r1/incidents failed"
[ "$(printf '%s' "$api" | jq -r '.incidents[0].kind + " " + .incidents[0].outcome')" = "hang recovered" ] ||
  fail "the run's incidents: $api"
[ "$(printf '%s' "$api" | jq '[.incidents[0].deliveries[] | select(.state == "sent")] | length')" = 4 ] ||
  fail "expected 4 sent deliveries (2 sinks x incident and follow-up): $api"
checks=$((checks + 1))
kill "$serve_pid"; wait "$serve_pid" || true; serve_pid=

ok=$(jq -c 'select(.status == 200)' "$tmp/received")
keys=$(printf '%s\n' "$ok" | jq -r .key | sort)
[ "$(printf '%s\n' "$keys" | uniq -d)" = "" ] || fail "a confirmed message came twice: $keys"
[ "$(printf '%s\n' "$keys" | wc -l)" -eq 4 ] || fail "expected 4 confirmed messages (hang, its follow-up, diverged, failed), got: $keys"
checks=$((checks + 1))
printf '%s\n' "$ok" | jq -e 'select((.body | fromjson | .idempotency_key) != .key)' >/dev/null &&
  fail "a Baton-Incident header differs from its body's key"
checks=$((checks + 1))
[ "$(jq -r 'select(.status == 500) | .key' "$tmp/received" | wc -l)" -ge 3 ] || fail "no 500 answers recorded"
checks=$((checks + 1))

hang=$(printf '%s\n' "$ok" | jq -c '.body | fromjson | select(.kind == "hang" and .message == "incident")')
expect_in "$hang" "\"attempt\":\"100.0.0\""
expect_in "$hang" "\"name\":\"hung\""
expect_in "$hang" "\"owner\":\"alice\""
expect_in "$hang" "ncclAllReduce"
expect_in "$hang" "\"node\":\"node7\""
expect_in "$hang" "\"rank\":\"1\""
expect_in "$hang" "http://baton.example/#/runs/$r1"
follow=$(printf '%s\n' "$ok" | jq -c '.body | fromjson | select(.kind == "hang" and .message == "follow_up")')
expect_in "$follow" "\"outcome\":\"recovered\""
# r2 had failed when its divergence was first seen: one message with the outcome, no follow-up.
div=$(printf '%s\n' "$ok" | jq -c '.body | fromjson | select(.kind == "diverged")')
expect_in "$div" "\"outcome\":\"failed\""
expect_in "$div" "loss is NaN for 20 steps in a row"
[ "$(printf '%s\n' "$div" | wc -l)" -eq 1 ] || fail "the divergence was sent more than once: $div"
[ "$(printf '%s\n' "$ok" | jq -c --argjson r "$r3" '.body | fromjson | select(.run.id == $r)' | wc -l)" -eq 0 ] ||
  fail "the clean run (not subscribed) sent a message"
checks=$((checks + 1))

# Email: the same four messages, each once, with the header.
[ "$(ls "$tmp/mail" | wc -l)" -eq 4 ] || fail "expected 4 mails, got $(ls "$tmp/mail" | wc -l)"
mails=$(cat "$tmp/mail"/*)
expect_in "$mails" "args: -t -oi"
expect_in "$mails" "To: ml-oncall@example.org"
expect_in "$mails" "Baton-Incident: "
expect_in "$mails" "Subject: [baton] hang: run 'hung'"

# The URL's secret is in no file under $BATON_HOME (database, WAL), no log and no row.
if grep -rqa "$secret" "$BATON_HOME" "$tmp/serve.out" "$tmp/serve.err"; then
  fail "the webhook URL's secret was written down"
fi
checks=$((checks + 1))

# serve SIGKILLed while a delivery is in flight: the message is not lost. It was never confirmed,
# so the next serve sends it again (after its lease) and the receiver confirms it.
r4=$("$fixture" "$db" run spent)
"$fixture" "$db" attempt "$r4" 400 failure_budget
"$fixture" "$db" status "$r4" FAILED
touch "$tmp/fail.hang"
"$baton" serve --port 0 --no-reconcile --interval 0.2 >>"$tmp/serve.out" 2>>"$tmp/serve.err" &
serve_pid=$!
in_flight() { jq -e --argjson r "$r4" 'select(.status == "hung" and (.body | fromjson | .run.id) == $r)' "$tmp/received" >/dev/null 2>&1; }
wait_for 30 in_flight || fail "no delivery of run $r4 reached the receiver"
kill -9 "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=
rm -f "$tmp/fail.hang"
"$baton" serve --port 0 --no-reconcile --interval 0.2 >>"$tmp/serve.out" 2>>"$tmp/serve.err" &
serve_pid=$!
confirmed_r4() {
  [ "$(jq -c --argjson r "$r4" 'select(.status == 200 and (.body | fromjson | .run.id) == $r) | .key' "$tmp/received" | sort -u | wc -l)" -eq 2 ]
}
wait_for 90 confirmed_r4 || fail "run $r4's messages (budget_spent, failed) were not all confirmed after the kill: $(incidents)"
kill "$serve_pid"; wait "$serve_pid" || true; serve_pid=
checks=$((checks + 1))

# `baton incidents` as text.
expect_exit 0 "$baton" incidents hung
expect_in "$out" "recovered"

# Bad input: exit 78 naming the key or the reference.
printf 'run: {name: e, steps: 5}\ndata: {path: data}\nalerts:\n  sinks: [{name: x, type: webhook, url: "http://example.org/%s"}]\n' "$secret" >"$tmp/inline.yaml"
mkdir -p "$tmp/data"
expect_exit 78 "$baton" validate "$tmp/inline.yaml"
expect_in "$err" "alerts.sinks[0].url"
case "$err" in *"$secret"*) fail "the inline URL was repeated in the error" ;; esac
printf 'run: {name: e, steps: 5}\ndata: {path: data}\nalerts:\n  sinks: [{name: x, type: pager, url: env:X}]\n  subscribe: [hang, oom]\n' >"$tmp/kinds.yaml"
expect_exit 78 "$baton" validate "$tmp/kinds.yaml"
expect_in "$err" "alerts.sinks[0].type"
expect_in "$err" "unknown incident kind 'oom'"
printf 'run: {name: e, steps: 5}\ndata: {path: data}\nalerts:\n  sinks: [{name: x, type: slack, url: env:BATON_NO_SUCH_VAR}]\n' >"$tmp/unset.yaml"
expect_exit 0 "$baton" validate "$tmp/unset.yaml"
expect_exit 78 env PATH= "$baton" submit "$tmp/unset.yaml"
expect_in "$err" "env:BATON_NO_SUCH_VAR"
printf 'sinks: [{name: x, type: webhook, url: file:%s/missing}]\nsubscribe: [stalled]\n' "$tmp" >"$BATON_HOME/alerts.yaml"
expect_exit 78 "$baton" alerts test
expect_in "$err" "file:$tmp/missing"
printf 'subscribe: [hang, oom]\n' >"$BATON_HOME/alerts.yaml"
expect_exit 78 "$baton" watch --once
expect_in "$err" "alerts.yaml"
expect_in "$err" "'oom'"

echo "alerts_e2e_test: $checks checks passed"
