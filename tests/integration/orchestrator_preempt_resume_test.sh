#!/usr/bin/env bash
# Integration test on the real dev cluster (slurm/dev_cluster.sh up): a run submitted with
# `baton submit` on `debug`, preempted by a job on `urgent` that needs every CPU, requeues under
# the same job id, resumes `exact` from the checkpoint written on the signal, and completes.
# The trainer is tests/integration/fake_trainer.sh (BATON_TRAIN_BIN), started through srun.
# The requeue hold (BeginTime = requeue + ~120 s on 22.05) is cut with
# `scontrol update jobid=N StartTime=now`, so the test takes well under a minute.
# usage: orchestrator_preempt_resume_test.sh BATON
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
export FAKE_STEP_SLEEP=0.3
show_field() { "$baton" show "$run" --json | jq -r "$1"; }

require_idle_cluster

# ------------------------------------------------------------------ submit
mkdir -p "$TMP/data"
cat >"$TMP/it.yaml" <<YAML
run: {name: it-preempt, steps: 30, seed: 0}
data: {path: data}
slurm: {partition: debug, cpus_per_task: $CPUS, time: "5:00", signal: USR1, signal_lead_s: 60}
checkpoint: {every: 5}
YAML
submit "$TMP/it.yaml"
grep -q -- '--signal=B:USR1@60' "$BATON_HOME/runs/$run-it-preempt/sbatch.sh" || fail "sbatch.sh lacks --signal"
ok "submitted run $run as job $job"

progress() { local s; s=$(show_field .last_step); [[ $s != null ]] && ((s >= 8)); }
wait_for 60 "run $run to pass step 8" progress
ok "run $run RUNNING: step $(show_field .last_step)"

# ------------------------------------------------------------------ preempt
urgent=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J it-urgent -o /dev/null --wrap 'sleep 4')
track_job "$urgent"
wait_for 60 "job $job to be requeued (PENDING, Restarts=1)" requeued "$job" 1
ok "job $job preempted and requeued by the launcher"
release_now "$job"

wait_for 90 "run $run to complete" run_is "$run" COMPLETED
ok "run $run COMPLETED"

# ------------------------------------------------------------------ history
attempts=$("$baton" attempts "$run" --json)
n=$(jq length <<<"$attempts")
((n >= 2)) || fail "expected >= 2 attempts, got $n: $attempts"
a() { jq -r ".[$1].$2" <<<"$attempts"; }
[[ $(a 0 job_id) == "$job" && $(a 1 job_id) == "$job" ]] || fail "attempts under other job ids: $attempts"
[[ $(a 0 restart_count) == 0 && $(a 1 restart_count) == 1 ]] || fail "restart counts: $attempts"
[[ $(a 0 resume_mode) == fresh && $(a 0 step0) == 0 ]] || fail "attempt 0 not fresh from 0: $attempts"
[[ $(a 0 end_reason) == preempted ]] || fail "attempt 0 end_reason $(a 0 end_reason), want preempted"
last0=$(a 0 last_step)
((last0 >= 8 && last0 < 30)) || fail "attempt 0 last_step $last0"
[[ $(a 1 resume_mode) == exact ]] || fail "attempt 1 resumed $(a 1 resume_mode), want exact"
[[ $(a 1 step0) == "$last0" ]] || fail "attempt 1 step0 $(a 1 step0), want $last0 (the signal checkpoint)"
[[ $(a 1 checkpoint) == */checkpoint_step_"$last0" ]] || fail "attempt 1 checkpoint $(a 1 checkpoint)"
[[ $(a $((n - 1)) last_step) == 30 && $(a $((n - 1)) end_reason) == completed ]] ||
    fail "last attempt did not complete step 30: $attempts"
ok "attempts: 0..$last0 fresh (preempted), then exact from $last0 to 30 under job $job"

steps=$(show_field .steps)
[[ $steps == 30 ]] || fail "expected 30 effective step rows, got $steps"
ckpts=$("$baton" checkpoints "$run" --json)
[[ $(jq '[.[] | select(.step == 30 and .valid)] | length' <<<"$ckpts") == 1 ]] || fail "no valid checkpoint at 30: $ckpts"
[[ $(jq -r .status <<<"$("$baton" ls --json | jq '.[0]')") == COMPLETED ]] || fail "ls does not show COMPLETED"
"$baton" show "$run"
done_line
