#!/usr/bin/env bash
# Alerts from real runs on the real dev cluster (docs/alerts.md), with `baton watch` delivering to
# a webhook receiver on 127.0.0.1 (tests/orchestrator/alert_receiver.py, started here):
#   A. eight incident kinds caused by real runs: a hang (SIGSTOP of the trainer), a crash loop
#      (no_progress), a divergence (lr 1e30), a data error and a failure (a NaN in the data), a
#      spent failure budget (a trainer that segfaults, max_failures 1), a stall (a slow first
#      step, alerts.stall_s 4) and a completion. Each run subscribes to its own kinds only, so
#      exactly 8 first messages arrive, one per kind, each at most 15 s after the event was
#      recorded (for the hang: its detection bound + 15 s after the SIGSTOP), each exactly once.
#   B. the receiver down (its port closed) for 2 minutes while 3 runs fail: each of the 3 arrives
#      afterwards exactly once by its idempotency key (Baton-Incident); meanwhile a clean run
#      preempted 3 times, subscribed to failures only, queues and sends nothing.
#   C. `baton watch` SIGKILLed while a delivery is in flight: the next watch sends it again with
#      the same key and the receiver confirms it; nothing is lost.
#   D. the webhook URLs (env: and file: references, each with a secret) are in no file under
#      $BATON_HOME or a run folder, no log and no row of the store.
# usage: alerts_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
receiver_py=$(realpath "$(dirname "$0")/../orchestrator/alert_receiver.py")

require_idle_cluster
make_dataset "$TMP/ds"
cp -r "$TMP/ds" "$TMP/ds-nan"
bad_file=$(sed -n 4p "$TMP/ds-nan/meta/episodes.jsonl" | jq -r .file)
python3 "$(dirname "$0")/../data/set_tensor_value.py" "$TMP/ds-nan/$bad_file" latents 5 nan
mkdir -p "$BATON_HOME"
recv=$TMP/received.jsonl
touch "$recv"

# start_receiver [PORT]: the receiver in the background (PORT 0: any), $port set once it listens.
receiver_pid=
start_receiver() {
  rm -f "$TMP/port"
  python3 "$receiver_py" "$TMP/port" "$recv" "$TMP/fail" "${1:-0}" 2>>"$TMP/receiver.err" &
  receiver_pid=$!
  track_pid "$receiver_pid"
  wait_for 20 "the receiver to listen" test -s "$TMP/port"
  port=$(cat "$TMP/port")
}
stop_receiver() {
  kill "$receiver_pid"
  wait "$receiver_pid" 2>/dev/null || true
}
watch_pid=
start_watch() {
  "$baton" watch --interval 1 >>"$TMP/watch.out" 2>>"$TMP/watch.err" &
  watch_pid=$!
  track_pid "$watch_pid"
}

start_receiver
secret="hook$RANDOM$RANDOM$RANDOM"
secret2="filehook$RANDOM$RANDOM$RANDOM"
export BATON_ALERT_URL="http://127.0.0.1:$port/hook/$secret"
mkdir -p "$TMP/creds"
echo "http://127.0.0.1:$port/hook/$secret2" >"$TMP/creds/hook_url"
# The lab's rules: public_url only (no sink, no subscription), so every message below comes from
# a run's own alerts: section.
echo "public_url: http://baton.test/" >"$BATON_HOME/alerts.yaml"

slurm="slurm: {partition: debug, cpus_per_task: 1, time: \"5:00\""
# alerts_line KINDS [URL_REF] [TIMEOUT]: a run's alerts: section with one webhook sink.
alerts_line() {
  echo "alerts: {sinks: [{name: hook, type: webhook, url: \"${2:-env:BATON_ALERT_URL}\", timeout_s: ${3:-2}}], subscribe: [$1]${4:+, stall_s: $4}}"
}
start_watch

# ------------------------------------------------------------------ A: eight kinds
declare -A RUN JOB DIR
submit_as() { # submit_as KEY CFG [VAR=VALUE...]: baton submit with VAR=VALUE in its environment
  local key=$1 cfg=$2 out
  shift 2
  out=$(env "$@" "$baton" submit "$cfg" --json) || fail "submit $key failed"
  RUN[$key]=$(jq -r .run_id <<<"$out")
  JOB[$key]=$(jq -r .job_id <<<"$out")
  DIR[$key]=$(jq -r .run_dir <<<"$out")
  track_job "${JOB[$key]}"
}
IT_TRAIN="{dtype: float32, log_every: 50, hang_min_s: 3, hang_factor: 5, first_step_timeout_s: 60}" \
  write_config "$TMP/hang.yaml" al-hang 300 "checkpoint: {every: 40, keep_last: 5}" "$slurm}" \
  "$(alerts_line hang)"
submit_as hang "$TMP/hang.yaml"
write_config "$TMP/loop.yaml" al-loop 40 "checkpoint: {every: 20, keep_last: 5}" \
  "$slurm, max_failures: 5}" "$(alerts_line no_progress)"
submit_as loop "$TMP/loop.yaml" BATON_TEST_CRASH_AT_STEP=30
write_config "$TMP/div.yaml" al-diverged 40 "$slurm}" "$(alerts_line diverged)"
sed -i 's/lr: 2.0e-3/lr: 1.0e+30/' "$TMP/div.yaml"
submit_as div "$TMP/div.yaml"
write_config "$TMP/nan.yaml" al-nan 20 "$slurm}" "$(alerts_line "data_error, failed")"
sed -i "s|path: $TMP/ds,|path: $TMP/ds-nan,|" "$TMP/nan.yaml"
submit_as nan "$TMP/nan.yaml"
write_config "$TMP/budget.yaml" al-budget 20 "$slurm, max_failures: 1, in_job_restarts: 0}" \
  "$(alerts_line budget_spent)"
submit_as budget "$TMP/budget.yaml" BATON_TRAIN_BIN="$FAKE_TRAINER" FAKE_CRASH=segv
IT_TRAIN="{dtype: float32, log_every: 10, first_step_timeout_s: 120}" \
  write_config "$TMP/stall.yaml" al-stall 20 "$slurm}" \
  "$(alerts_line "stalled, completed" "file:$TMP/creds/hook_url" 2 4)"
submit_as stall "$TMP/stall.yaml" BATON_TEST_FIRST_STEP_SLEEP_S=12
ok "6 runs submitted, each subscribed to its own kinds: ${!RUN[*]}"

# The hang: SIGSTOP of the trainer once it passed step 50 (a checkpoint at 40 exists).
wait_for 180 "run al-hang to log step 50" attempt_progressed "${DIR[hang]}" "${JOB[hang]}" 0 50
pid=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "${DIR[hang]}/heartbeat/rank-00000")
[[ -n $pid ]] || fail "no PID in the heartbeat of run al-hang"
# Stopped in a step, never in a save: a save carries its own budget (a slow save is not a hang),
# so a trainer stopped while saving is a hang only after that budget. The phase is read from the
# heartbeat once the trainer is stopped (it writes no more); in a save it is let go and stopped
# again a moment later.
phase_of() { sed -n 's/.* phase=\([^ ]*\) .*/\1/p' "${DIR[hang]}/heartbeat/rank-00000"; }
for try in $(seq 20); do
  t_stop=$(date +%s.%N)
  kill -STOP "$pid" || fail "kill -STOP $pid"
  [[ $(phase_of) != save ]] && break
  kill -CONT "$pid"
  sleep 0.05
done
[[ $(phase_of) != save ]] || fail "the trainer of al-hang was saving at each of 20 tries"
note "SIGSTOP to the trainer of al-hang (pid $pid) in phase $(phase_of)"

all_ended() {
  local k
  release_held "${JOB[budget]}" # the requeue after the first crash
  for k in "${!RUN[@]}"; do run_is "${RUN[$k]}" FAILED COMPLETED CANCELLED || return 1; done
}
wait_for 300 "the 6 runs to end" all_ended
first_sent() { jq -sc '[.[] | select(.status == 200 and (.key | endswith(".1")))]' "$recv"; }
eight_arrived() { [[ $(first_sent | jq 'length') -ge 8 ]]; }
wait_for 60 "8 first messages" eight_arrived
sleep 5 # a ninth would come now if one were owed
firsts=$(first_sent)
kinds=$(jq -r '[.[] | .body | fromjson | .kind] | sort | join(" ")' <<<"$firsts")
[[ $kinds == "budget_spent completed data_error diverged failed hang no_progress stalled" ]] ||
  fail "first messages of kinds '$kinds', want one each of the 8 kinds"
[[ $(jq '[.[] | .key] | unique | length' <<<"$firsts") == 8 ]] || fail "a first message came twice: $firsts"
jq -e 'all(.[]; (.body | fromjson | .idempotency_key) == .key)' <<<"$firsts" >/dev/null ||
  fail "a Baton-Incident header differs from its body's key"
ok "exactly 8 first messages, one per kind ($kinds), the header equal to the body's key"

# lateness KIND: seconds from the event to the message's arrival. The event's time is what the
# store recorded: the end of the attempt (its attempt_end record, which also carries a hang), or
# for a stall the attempt's start + alerts.stall_s. With MODE detected or sigstop (hang): the
# detection's and the message's seconds after the SIGSTOP.
lateness() {
  local msg run label attempt
  msg=$(jq -c --arg k "$1" '.[] | select((.body | fromjson | .kind) == $k)' <<<"$firsts")
  run=$(jq -r '.body | fromjson | .run.id' <<<"$msg")
  label=$(jq -r '.body | fromjson | .attempt' <<<"$msg")
  attempt=$("$baton" attempts "$run" --json | jq -c --arg l "$label" \
    '.[] | select("\(.job_id).\(.restart_count).\(.in_job_seq)" == $l)')
  [[ -n $attempt ]] || fail "$1: no attempt $label in run $run"
  jq -rn --argjson m "$msg" --argjson a "$attempt" --arg k "$1" --arg mode "${2:-}" --arg t "$t_stop" '
    if $mode == "detected" then $a.hang_detected_at - ($t | tonumber)
    elif $mode == "sigstop" then $m.t - ($t | tonumber)
    else $m.t - (if $k == "stalled" then $a.started_at + 4 else $a.ended_at end) end
    | . * 10 | round / 10'
}
lines=()
for k in budget_spent completed data_error diverged failed hang no_progress stalled; do
  late=$(lateness "$k")
  awk -v x="$late" 'BEGIN { exit !(x <= 15) }' || fail "the $k message arrived $late s after the event"
  lines+=("$k ${late}s")
done
ok "each first message arrived at most 15 s after its event: ${lines[*]}"
# The hang from the SIGSTOP: detected within 10 s (hang_min_s 3 + the launcher's 1 s poll + a
# step, as hang_restart_test.sh has it); the launcher records it once the stacks are captured
# (bounded to 30 s) and the step ended, so the message comes at most 10 + 30 + 15 s after.
detected=$(lateness hang detected) sigstop=$(lateness hang sigstop)
awk -v d="$detected" -v m="$sigstop" 'BEGIN { exit !(d <= 10 && m <= 10 + 30 + 15) }' ||
  fail "the hang was detected $detected s and its message came $sigstop s after the SIGSTOP"
hang_msg=$(jq -c '.[] | .body | fromjson | select(.kind == "hang")' <<<"$firsts")
jq -e --arg url "http://baton.test/#/runs/${RUN[hang]}" '.rank == "0" and (.excerpt | test("#[0-9]"))
  and .url == $url and (.attempt | test("^[0-9]+[.]0[.]0$")) and .run.owner != ""' <<<"$hang_msg" >/dev/null ||
  fail "the hang message lacks its rank, stack, link or attempt: ${hang_msg:0:800}"
ok "the hang: detected ${detected} s and its message ${sigstop} s after the SIGSTOP, with rank 0, its stack and the run page link"
follow_ups() { jq -sc '[.[] | select(.status == 200 and (.key | endswith(".2"))) | .body | fromjson]' "$recv"; }
two_follow_ups() { [[ $(follow_ups | jq '[.[] | select(.outcome == "recovered")] | length') == 2 ]]; }
wait_for 30 "the follow-ups of the hang and the stall" two_follow_ups
[[ $(follow_ups | jq -r '[.[] | .kind] | sort | join(" ")') == "hang stalled" ]] ||
  fail "follow-ups: $(follow_ups)"
ok "one follow-up each for the hang and the stall: recovered"

# ------------------------------------------------------------------ B: receiver down 2 minutes
stop_receiver
t_down=$SECONDS
DOWN=()
for i in 1 2 3; do
  write_config "$TMP/down$i.yaml" "al-down$i" 20 "$slurm}" "$(alerts_line data_error)"
  sed -i "s|path: $TMP/ds,|path: $TMP/ds-nan,|" "$TMP/down$i.yaml"
  submit_as "down$i" "$TMP/down$i.yaml"
  DOWN+=("${RUN[down$i]}")
done
ok "receiver down; runs ${DOWN[*]} submitted to fail with a data error"
# tried_while_down: each of the 3 messages was tried and is still pending.
tried_while_down() {
  local r
  for r in "${DOWN[@]}"; do
    "$baton" incidents "$r" --json | jq -e '[.[] | .deliveries[] | select(.state == "pending" and .tries >= 1
      and (.last_error | length) > 0)] | length == 1' >/dev/null || return 1
  done
}
wait_for 120 "the 3 messages to be tried while the receiver is down" tried_while_down
ok "the 3 messages were tried and are pending: $("$baton" incidents "${DOWN[0]}" --json | jq -r '[.[] | .deliveries[]][0].last_error' | cut -c1-100)"

# Meanwhile: a clean run preempted 3 times, subscribed to failures only.
# 1600 steps: at ~40 steps/s the third attempt must still be running when its preemption lands.
write_config "$TMP/clean.yaml" al-clean 1600 "checkpoint: {every: 100, keep_last: 10}" \
  "slurm: {partition: debug, cpus_per_task: $CPUS, time: \"10:00\", signal: USR1, signal_lead_s: 60}" \
  "$(alerts_line "failed, hang, no_progress, diverged, data_error, budget_spent, hold_release_refused")"
# preempt_watched JOB RESTARTS_AFTER: preempt (lib.sh) for a job whose requeue hold the running
# watch releases too: the release here may find the job already started.
restarts_is() {
  [[ $(job_field "$1" JobState) != COMPLETED ]] ||
    fail "job $1 COMPLETED before the preemption landed: raise al-clean's steps"
  [[ $(job_field "$1" Restarts) == "$2" ]]
}
preempt_watched() {
  local urgent
  urgent=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J baton-it-urgent -o /dev/null --wrap 'sleep 2') ||
    fail "sbatch to urgent failed"
  track_job "$urgent"
  wait_for 90 "job $1 to be requeued (Restarts=$2)" restarts_is "$1" "$2"
  sleep 1 # see release_now in lib.sh
  scontrol update jobid="$1" StartTime=now 2>/dev/null || true
}
submit "$TMP/clean.yaml"
clean_run=$run clean_dir=$run_dir
wait_for 120 "attempt 0 of al-clean to log step 5" attempt_progressed "$run_dir" "$job" 0 5
preempt_watched "$job" 1
wait_for 120 "attempt 1 of al-clean to log 5 steps" attempt_advanced "$run_dir" "$job" 1 5
preempt_watched "$job" 2
wait_for 120 "attempt 2 of al-clean to log 5 steps" attempt_advanced "$run_dir" "$job" 2 5
preempt_watched "$job" 3
wait_for 300 "run al-clean to end" run_is "$clean_run" COMPLETED FAILED CANCELLED
[[ $(run_status "$clean_run") == COMPLETED ]] || fail "al-clean ended $(run_status "$clean_run")"
[[ $("$baton" attempts "$clean_run" --json | jq -r '[.[] | .end_reason] | join(" ")') == "preempted preempted preempted completed" ]] ||
  fail "al-clean attempts: $("$baton" attempts "$clean_run" --json | jq -c '[.[] | .end_reason]')"
ok "run al-clean preempted 3 times and COMPLETED"

while ((SECONDS - t_down < 120)); do sleep 1; done
start_receiver "$port"
ok "receiver back on port $port after $((SECONDS - t_down)) s down"
down_keys() {
  local r
  for r in "${DOWN[@]}"; do "$baton" incidents "$r" --json | jq -r '.[] | .deliveries[] | .idempotency_key'; done
}
down_confirmed() {
  local k
  for k in $(down_keys); do
    [[ $(jq -s --arg k "$k" '[.[] | select(.key == $k and .status == 200)] | length' "$recv") -ge 1 ]] || return 1
  done
}
# The backoff doubles from 5 s: a message first tried early in the 2 minutes waits up to 160 s.
wait_for 240 "the 3 messages after the receiver came back" down_confirmed
keys=$(down_keys)
[[ $(wc -w <<<"$keys") == 3 ]] || fail "the 3 failed runs queued $(wc -w <<<"$keys") messages, want 3: $keys"
sleep 5
for k in $keys; do
  n=$(jq -s --arg k "$k" '[.[] | select(.key == $k)] | length' "$recv")
  ((n == 1)) || fail "message $k arrived $n times"
  n=$(grep -c "alert $k .*not delivered, will retry" "$TMP/watch.err" || true)
  ((n == 1)) || fail "the failure of message $k was logged $n times, want once"
done
ok "each of $(tr '\n' ' ' <<<"$keys")arrived exactly once after the receiver came back; each failure logged once"
[[ $("$baton" incidents "$clean_run" --json | jq '[.[] | .deliveries[]] | length') == 0 ]] ||
  fail "al-clean queued messages: $("$baton" incidents "$clean_run" --json)"
[[ $(jq -s --argjson r "$clean_run" '[.[] | select((.body | fromjson | .run.id) == $r)] | length' "$recv") == 0 ]] ||
  fail "a message about al-clean reached the receiver"
ok "al-clean (3 preemptions, subscribed to failures): no message queued or sent"

# ------------------------------------------------------------------ C: watch SIGKILLed
echo 8 >"$TMP/fail.hang" # the receiver takes 8 s to answer, within the sink's 20 s
write_config "$TMP/kill.yaml" al-kill 20 "$slurm}" "$(alerts_line data_error "" 20)"
sed -i "s|path: $TMP/ds,|path: $TMP/ds-nan,|" "$TMP/kill.yaml"
submit_as kill "$TMP/kill.yaml"
in_flight() { jq -se --argjson r "${RUN[kill]}" 'any(.[]; .status == "hung" and (.body | fromjson | .run.id) == $r)' "$recv" >/dev/null; }
wait_for 120 "a delivery about al-kill in flight" in_flight
kill -KILL "$watch_pid"
wait "$watch_pid" 2>/dev/null || true
rm -f "$TMP/fail.hang"
ok "watch SIGKILLed while the receiver held the message about al-kill"
start_watch
kill_confirmed() { jq -se --argjson r "${RUN[kill]}" 'any(.[]; .status == 200 and (.body | fromjson | .run.id) == $r)' "$recv" >/dev/null; }
wait_for 120 "the message about al-kill after the restart" kill_confirmed
[[ $(jq -s --argjson r "${RUN[kill]}" '[.[] | select((.body | fromjson | .run.id) == $r) | .key] | unique | length' "$recv") == 1 ]] ||
  fail "the message about al-kill changed its key across the restart"
[[ $("$baton" incidents "${RUN[kill]}" --json | jq -r '[.[] | .deliveries[] | .state] | join(" ")') == sent ]] ||
  fail "al-kill's delivery: $("$baton" incidents "${RUN[kill]}" --json)"
ok "the next watch sent it again with the same key; confirmed, nothing lost"

# ------------------------------------------------------------------ D: no URL written down
kill "$watch_pid"
wait "$watch_pid" 2>/dev/null || true
for s in "$secret" "$secret2"; do
  hits=$(grep -rla "$s" "$BATON_HOME" "${DIR[@]}" "$clean_dir" "$TMP/watch.out" "$TMP/watch.err" 2>/dev/null || true)
  [[ -z $hits ]] || fail "a webhook URL's secret was written to: $hits"
  sqlite3 "$BATON_HOME/baton.db" .dump | grep -q "$s" && fail "a webhook URL's secret is in a row of the store"
done
grep -q "env:BATON_ALERT_URL" "${DIR[hang]}/run.yaml" ||
  fail "run.yaml does not keep the reference: $(grep -A3 alerts "${DIR[hang]}/run.yaml")"
ok "no secret in any file under \$BATON_HOME or a run folder, no log, no row; run.yaml keeps the reference"
done_line
