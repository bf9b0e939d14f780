#!/usr/bin/env bash
# `baton cancel` of a RUNNING run, with the real trainer on the real dev cluster. scancel's TERM
# reaches the launcher and the trainer as a preemption's warning signal would: the trainer
# checkpoints and exits 75. The launcher must end the run there (it finds the run folder's
# CANCELLED mark, which cancel writes before scancel), never `scontrol requeue` it: the job stays
# CANCELLED with Restarts=0, no second attempt starts, the last attempt ends `cancelled`, and baton
# says CANCELLED. A second cancel answers "already CANCELLED".
# usage: cancel_running_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"

require_idle_cluster
make_dataset "$TMP/ds"
write_config "$TMP/cancel.yaml" it-cancel 100000 \
  "checkpoint: {every: 1000, keep_last: 2}" \
  "slurm: {partition: debug, cpus_per_task: $CPUS, time: \"10:00\", signal: USR1, signal_lead_s: 60}"
submit "$TMP/cancel.yaml"
ok "submitted run $run as job $job"
wait_for 120 "attempt 0 to log step 3" attempt_progressed "$run_dir" "$job" 0 3
ok "run $run RUNNING at step $(last_step_in "$(events_file "$run_dir" "$job" 0)")"

out=$("$baton" cancel "$run") || fail "baton cancel $run failed: $out"
[[ $out == *"cancelled (scancel $job)"* ]] || fail "cancel printed: $out"
[[ -f $run_dir/CANCELLED ]] || fail "no cancel mark in $run_dir"
ok "baton cancel: $out"

wait_for 60 "attempt 0 to end" attempt_finished "$run_dir" "$job" 0
end=$(grep -h '"type":"attempt_end"' "$(events_file "$run_dir" "$job" 0)" | tail -n1)
[[ $(jq -r .action <<<"$end") == fail && $(jq -r .reason <<<"$end") == cancelled ]] ||
  fail "attempt 0 ended: $end (want action fail, reason cancelled)"
grep -q '"reason":"signal"' "$(events_file "$run_dir" "$job" 0)" ||
  fail "the trainer did not stop on the TERM (no segment_end with reason signal)"
ok "attempt 0: the trainer stopped on scancel's TERM, the launcher ended it: $(jq -c '{action, reason, exit_code}' <<<"$end")"

# The job stays ended: SLURM's requeue hold is ~120 s, but a requeue shows at once as
# PENDING/REQUEUED with Restarts=1.
gone() { case $(job_field "$job" JobState) in CANCELLED | "") return 0 ;; *) return 1 ;; esac; }
wait_for 30 "job $job to be CANCELLED" gone
sleep 5
state=$(job_field "$job" JobState) restarts=$(job_field "$job" Restarts)
[[ ($state == CANCELLED || -z $state) && ${restarts:-0} == 0 ]] ||
  fail "job $job is $state with Restarts=$restarts after the cancel (requeued?)"
second=$(events_file "$run_dir" "$job" 1)
[[ ! -e $second ]] || fail "a second attempt started: $second"
ok "job $job: ${state:-gone}, Restarts=${restarts:-0}; no second attempt"

[[ $(run_status "$run") == CANCELLED ]] || fail "run $run is $(run_status "$run")"
n=$("$baton" attempts "$run" --json | jq length)
((n == 1)) || fail "run $run has $n attempts"
again=$("$baton" cancel "$run") || fail "the second cancel failed: $again"
[[ $again == *"already CANCELLED"* ]] || fail "the second cancel printed: $again"
ok "run $run CANCELLED with 1 attempt; a second cancel: $again"
echo "PASS cancel_running ($checks checks)"
