#!/usr/bin/env bash
# Hangs and crashes handled inside the allocation (docs/orchestrator.md, "Hangs" and "Restarts
# inside the job"), with the real trainer on the real dev cluster:
#   A. SIGSTOP of rank 1 of a 2-rank run: the launcher declares a hang within its bound (printed),
#      captures the stale rank's stacks (gdb), ends the job step, restarts the trainer in the same
#      job from the newest checkpoint (attempt 0 `hang`, attempt 1 `restart_cause: hang`), and the
#      run completes bit-identical to an uninterrupted 2-rank run.
#   B. (one node only) kill -9 of rank 1: an in-job restart (`crash`) and the same exact
#      completion.
#   C. (one node only) a slow first step and slow saves (test hooks, each longer than
#      train.hang_min_s): no hang is declared.
#   E. (one node only) one run with a kill -9, a SIGSTOP and a preemption: its time buckets add up
#      to its wall time and productive equals the counted steps' times.
#   D. (one node only) the trainer killing itself at the same step on every start: two restarts
#      without a newer checkpoint end the run FAILED `no_progress`, never requeued.
# HANG_NODES=2 runs A on the two-node cluster (slurm/dev_cluster.sh up --nodes 2), one rank per
# node. Timings are small on purpose: train.hang_min_s 3.
# usage: hang_restart_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
NODES=${HANG_NODES:-1}
STEPS=${BATON_IT_STEPS:-300}
if ((NODES == 2)); then
  eval "$(bash "$(dirname "$0")/../../slurm/dev_cluster.sh" env --nodes 2)"
fi
require_idle_cluster
if ((NODES == 2)); then
  [[ $(sinfo -h -p debug -o '%D') == 2 ]] || { echo "FAIL  the debug partition has no 2 nodes" >&2; exit 2; }
  slurm="slurm: {partition: debug, nodes: 2, ntasks_per_node: 1, cpus_per_task: 1, time: \"10:00\"}"
  per_task=1
else
  ((CPUS >= 2)) || { echo "FAIL  needs 2 CPUs in the debug partition" >&2; exit 2; }
  per_task=1
  slurm="slurm: {partition: debug, ntasks_per_node: 2, cpus_per_task: 1, time: \"10:00\"}"
fi
export IT_TRAIN="{dtype: float32, log_every: 50, hang_min_s: 3, hang_factor: 5, first_step_timeout_s: 30}"
make_dataset "$TMP/ds"
write_config "$TMP/r.yaml" it-hang "$STEPS" "checkpoint: {every: 40, keep_last: 20}" "$slurm"
start_reference "$TMP/r.yaml" "$TMP/reference" 2 "$per_task"

# heartbeat_pid RUN_DIR RANK: the PID in the rank's heartbeat file.
heartbeat_pid() { sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$1/heartbeat/rank-0000$2" 2>/dev/null; }
attempt_json() { "$baton" attempts "$1" --json; }

# A (and B): disturb rank 1 with SIGNAL once attempt 0 passed step 50 (a checkpoint at 40 exists).
disturb_and_finish() {
  local signal=$1 want_cause=$2 pid t_stop attempts a0 a1
  submit "$TMP/r.yaml"
  ok "submitted run $run as job $job (${NODES} node(s), 2 ranks) to be disturbed by SIG$signal"
  wait_for 120 "attempt 0 to log step 50" attempt_progressed "$run_dir" "$job" 0 50
  pid=$(heartbeat_pid "$run_dir" 1)
  [[ -n $pid ]] || fail "no PID in $run_dir/heartbeat/rank-00001: $(cat "$run_dir"/heartbeat/* 2>&1)"
  t_stop=$(date +%s.%N)
  kill -"$signal" "$pid" || fail "kill -$signal $pid"
  note "SIG$signal to rank 1 (pid $pid) at step $(last_step_in "$(events_file "$run_dir" "$job" 0)")"
  wait_for 60 "attempt $job.0 to end" attempt_finished "$run_dir" "$job" 0
  wait_for 240 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
  [[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
  attempts=$(attempt_json "$run")
  a0() { jq -r ".[0].$1" <<<"$attempts"; }
  a1() { jq -r ".[1].$1" <<<"$attempts"; }
  [[ $(jq length <<<"$attempts") == 2 ]] || fail "expected 2 attempts: $attempts"
  [[ $(a0 job_id) == "$job" && $(a1 job_id) == "$job" && $(a1 restart_count) == 0 && $(a1 in_job_seq) == 1 ]] ||
    fail "attempt 1 is not a restart inside job $job: $(jq -c '.[] | [.job_id, .restart_count, .in_job_seq]' <<<"$attempts")"
  [[ $(a0 action) == restart && $(a1 restart_cause) == "$want_cause" && $(a1 end_reason) == completed ]] ||
    fail "attempt 0 $(a0 action)/$(a0 end_reason), attempt 1 cause $(a1 restart_cause), end $(a1 end_reason)"
  # The newest valid checkpoint at the disturbance: a multiple of 40, at most where attempt 0 got.
  [[ $(a1 resume_mode) == exact && $(a1 step0) -ge 40 && $(($(a1 step0) % 40)) == 0 && $(a1 step0) -le $(a0 last_step) ]] ||
    fail "attempt 1 resumed $(a1 resume_mode) from $(a1 step0); attempt 0 reached $(a0 last_step)"
  [[ $(job_field "$job" Restarts) == 0 ]] || fail "job $job was requeued (Restarts=$(job_field "$job" Restarts))"
  if [[ $want_cause == hang ]]; then
    local detected stale stack_lines bound
    detected=$(a0 hang_detected_at)
    stale=$(a0 hang_stale_ranks)
    [[ $(a0 end_reason) == hang && $stale == *"1:"* ]] || fail "attempt 0: $(a0 end_reason), stale ranks '$stale'"
    bound=$(awk -v d="$detected" -v t="$t_stop" 'BEGIN { printf "%.1f", d - t }')
    # Bound: hang_min_s 3 (the p99 of these steps is far below it) + the 1 s poll + a step.
    awk -v x="$bound" 'BEGIN { exit !(x > 2.5 && x < 10) }' ||
      fail "hang declared $bound s after the SIGSTOP, outside (2.5, 10) s"
    ok "hang of rank 1 declared ${bound} s after the SIGSTOP (limit max(hang_min_s 3, 5 x p99)); stale: $stale"
    local stack
    stack=$(a0 hang_stack)
    stack_lines=$(grep -c '^#[0-9]' <<<"$stack" || true)
    [[ $stack == *"=== rank 1 pid $pid "* ]] || fail "the stack record does not name rank 1, pid $pid: ${stack:0:600}"
    ((stack_lines >= 3)) || fail "no gdb frames in the captured stacks: ${stack:0:800}"
    grep -q "stacks of rank 1 (pid $pid" "$run_dir/logs/$job.out" || fail "the job log has no stacks of rank 1"
    ok "stacks of rank 1 captured: $stack_lines frames in the attempt record and the job log"
  else
    [[ $(a0 end_reason) == crashed && $(a0 exit_code) -gt 128 ]] || fail "attempt 0: $(a0 end_reason), exit $(a0 exit_code)"
    ok "rank 1 killed: attempt 0 crashed (exit $(a0 exit_code)), restarted in job $job"
  fi
  "$baton" show "$run" >"$TMP/show.txt"
  sed -n '8,11p' "$TMP/show.txt"
  grep -q "$job.0.1" "$TMP/show.txt" && grep -q "#1 ($want_cause)" "$TMP/show.txt" ||
    fail "baton show does not list the in-job restart"
  ok "attempts: $job.0 0..$(a0 last_step) ($(a0 end_reason)) | $job.0.1 $(a1 step0)..$STEPS exact (completed); baton show lists both"
  finish_reference
  same_final_state "$TMP/reference/checkpoints/checkpoint_step_$STEPS" "$run_dir/checkpoints/checkpoint_step_$STEPS"
  ok "final weights and AdamW state bit-identical to an uninterrupted 2-rank run"
}

disturb_and_finish STOP hang
((NODES == 2)) && { done_line; exit 0; }
wait_cluster_idle 60
disturb_and_finish KILL crash

# E (one node only): one run with a crash, a hang and a preemption: where its time went adds up
# to its wall time within 1 %, productive is the counted steps' times, and the restarts, the hang
# verdict and the requeue show in their own buckets.
wait_cluster_idle 60
submit "$TMP/r.yaml"
wait_for 120 "attempt 0 to log step 50" attempt_progressed "$run_dir" "$job" 0 50
kill -KILL "$(heartbeat_pid "$run_dir" 1)" || fail "kill -9 of rank 1"
wait_for 120 "the in-job restart to log 50 steps" attempt_advanced "$run_dir" "$job" 0.1 50
kill -STOP "$(heartbeat_pid "$run_dir" 1)" || fail "SIGSTOP of rank 1"
wait_for 120 "the second in-job restart to log 45 steps" attempt_advanced "$run_dir" "$job" 0.2 45
preempt "$job" 1
wait_for 240 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "the mixed run ended $(run_status "$run")"
json=$("$baton" show "$run" --json)
[[ $(jq -c '[.attempts[] | .end_reason]' <<<"$json") == '["crashed","hang","preempted","completed"]' ]] ||
  fail "mixed run attempts: $(jq -c '[.attempts[] | [.job_id, .restart_count, .in_job_seq, .end_reason]]' <<<"$json")"
counted=$(sqlite3 "$BATON_HOME/baton.db" "SELECT SUM(step_time_s) FROM steps WHERE run_id = $run AND superseded = 0 AND nonfinite = 0")
jq -e --argjson counted "$counted" '
  (.attempts[-1].ended_at - .created_at) as $wall | .time as $t
  | (($t.buckets | add) - $wall | fabs) <= 0.01 * $wall
    and (($t.buckets.productive - $counted) | fabs) <= 1e-6 * $counted
    and $t.buckets.restart > 0 and $t.buckets.hang_detection > 0 and $t.buckets.requeue_hold > 0
    and $t.buckets.rolled_back > 0 and $t.buckets.stop > 0' \
  >/dev/null <<<"$json" || fail "time buckets of the mixed run: $(jq -c .time.buckets <<<"$json") (counted steps: $counted s)"
ok "crash, hang and preemption in one run: buckets $(jq -c '.time.buckets | map_values(. * 10 | round / 10)' <<<"$json") add up to the wall time, productive = the counted steps ($counted s), ETTR $(jq '.time.ettr * 1000 | round / 10' <<<"$json") %"

# C: a slow first step (8 s) and slow saves (8 s each), both longer than hang_min_s 3.
wait_cluster_idle 60
write_config "$TMP/c.yaml" it-slow 40 "checkpoint: {every: 20, keep_last: 5}" \
  "slurm: {partition: debug, ntasks_per_node: 1, cpus_per_task: 1, time: \"10:00\"}"
BATON_TEST_SAVE_SLEEP_S=8 BATON_TEST_FIRST_STEP_SLEEP_S=8 submit "$TMP/c.yaml"
wait_for 120 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
attempts=$(attempt_json "$run")
[[ $(run_status "$run") == COMPLETED && $(jq length <<<"$attempts") == 1 ]] ||
  fail "the slow run: $(run_status "$run"), $(jq -c '[.[] | .end_reason]' <<<"$attempts")"
grep -q "hang:" "$run_dir/logs/$job.out" && fail "a hang was declared during a slow save or first step"
saves=$(grep -c '"type":"checkpoint"' "$(events_file "$run_dir" "$job" 0)")
((saves == 2)) || fail "expected 2 saves, saw $saves"
ok "no false alarm: an 8 s first step and two 8 s saves with hang_min_s 3, one attempt, COMPLETED"

# D: the trainer kills itself at step index 30 on every start (checkpoint at 20).
write_config "$TMP/d.yaml" it-crashloop 40 "checkpoint: {every: 20, keep_last: 5}" \
  "slurm: {partition: debug, ntasks_per_node: 1, cpus_per_task: 1, time: \"10:00\", max_failures: 5}"
BATON_TEST_CRASH_AT_STEP=30 submit "$TMP/d.yaml"
wait_for 120 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
attempts=$(attempt_json "$run")
[[ $(run_status "$run") == FAILED ]] || fail "the crash loop ended $(run_status "$run")"
[[ $(jq -c '[.[] | .in_job_seq]' <<<"$attempts") == "[0,1,2]" &&
   $(jq -c '[.[] | .end_reason]' <<<"$attempts") == '["crashed","crashed","no_progress"]' &&
   $(jq -r '.[2].action' <<<"$attempts") == fail ]] ||
  fail "crash loop attempts: $(jq -c '[.[] | [.in_job_seq, .action, .end_reason, .step0, .last_step]]' <<<"$attempts")"
sleep 2
[[ $(job_field "$job" Restarts) == 0 && $(job_field "$job" JobState) != PENDING ]] ||
  fail "job $job was requeued: $(job_field "$job" JobState) Restarts=$(job_field "$job" Restarts)"
ok "three crashes at step 31: restarts 1 and 2 from step 20, then FAILED no_progress; job $job never requeued"
done_line
