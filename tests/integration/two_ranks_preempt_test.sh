#!/usr/bin/env bash
# Issue 5, "must show" 2: a run on 2 tasks (ntasks_per_node: 2; srun starts 2 trainer ranks that
# meet over Gloo/TCP on a port derived from the job id) is preempted once by an `urgent` job; srun
# passes the forwarded USR1 to both ranks, they stop after the same step, rank 0 checkpoints, the
# launcher requeues the same job id, the next attempt resumes `exact` on 2 ranks, and the final
# weights, AdamW state and per-step series are bit-identical to an uninterrupted 2-rank run.
# usage: two_ranks_preempt_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
# 480 steps: at ~70 steps/s the run must still be training when the preemption lands.
STEPS=${BATON_IT_STEPS:-480}

require_idle_cluster
((CPUS >= 2)) || { echo "FAIL  needs 2 CPUs in the debug partition" >&2; exit 2; }
per_task=$((CPUS / 2))
make_dataset "$TMP/ds"
write_config "$TMP/r2.yaml" it-two-ranks "$STEPS" \
  "checkpoint: {every: 100, keep_last: 10}" \
  "slurm: {partition: debug, ntasks_per_node: 2, cpus_per_task: $per_task, time: \"10:00\"}"
submit "$TMP/r2.yaml"
ok "submitted run $run as job $job: 2 tasks x $per_task CPUs, target $STEPS steps"
start_reference "$TMP/r2.yaml" "$TMP/reference" 2 "$per_task"

wait_for 120 "attempt 0 to log step 5" attempt_progressed "$run_dir" "$job" 0 5
[[ $(jq -s 'map(select(.type == "segment_start"))[0].world_size' "$(events_file "$run_dir" "$job" 0)") == 2 ]] ||
  fail "attempt 0 did not start 2 ranks"
preempt "$job" 1
ok "preempted: job $job requeued (PENDING, Restarts=1), hold cut with StartTime=now"

wait_for 300 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
ok "run $run COMPLETED"

attempts=$("$baton" attempts "$run" --json)
a() { jq -r ".[$1].$2" <<<"$attempts"; }
[[ $(jq length <<<"$attempts") == 2 ]] || fail "expected 2 attempts: $attempts"
e0=$(a 0 last_step)
[[ $(a 0 job_id) == "$job" && $(a 1 job_id) == "$job" && $(a 1 restart_count) == 1 ]] || fail "job ids: $attempts"
[[ $(a 0 resume_mode) == fresh && $(a 0 end_reason) == preempted && $(a 0 exit_code) == 75 ]] ||
  fail "attempt 0: $(a 0 resume_mode), $(a 0 end_reason), exit $(a 0 exit_code)"
[[ $(a 1 resume_mode) == exact && $(a 1 step0) == "$e0" && $(a 1 end_reason) == completed ]] ||
  fail "attempt 1: $(a 1 resume_mode) from $(a 1 step0), $(a 1 end_reason); want exact from $e0, completed"
[[ $(a 0 world_size) == 2 && $(a 1 world_size) == 2 && $(a 1 last_step) == "$STEPS" ]] ||
  fail "world sizes $(a 0 world_size)/$(a 1 world_size), last step $(a 1 last_step)"
[[ $(a 1 resume_warmup_steps) == 0 ]] || fail "attempt 1 re-warms up"
((0 < e0 && e0 < STEPS)) || fail "attempt 0 stopped at $e0"
ok "attempts: 0..$e0 fresh on 2 ranks (preempted, 75) | $e0..$STEPS exact on 2 ranks (completed)"
"$baton" show "$run"

finish_reference
same_final_state "$TMP/reference/checkpoints/checkpoint_step_$STEPS" "$run_dir/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state bit-identical to an uninterrupted 2-rank run"
diff <(effective_steps "$TMP/reference") <(effective_steps "$run_dir") >"$TMP/steps.diff" ||
  fail "per-step lr/loss/grad norm differ from the uninterrupted 2-rank run: $(head -n 5 "$TMP/steps.diff")"
ok "per-step lr, loss and grad norm bit-identical to the uninterrupted 2-rank run"
done_line
