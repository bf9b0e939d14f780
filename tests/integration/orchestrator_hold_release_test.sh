#!/usr/bin/env bash
# Integration test on the real dev cluster (slurm/dev_cluster.sh up): the requeue hold released
# by `baton watch`. A run on `debug` is preempted by a job on `urgent` that needs every CPU; the
# trainer (tests/integration/fake_trainer.sh) checkpoints on the signal and exits 75, the launcher
# requeues the job, SLURM holds it (BeginTime, ~2 min) and `baton watch` running beside it ends
# the hold slurm.release_hold_after_s (3 s) after the attempt ended: the next attempt's first step
# comes within 20 s of the preemption, twice (the resumed attempt is preempted too), and the
# run's time buckets hold each released hold. Then the same run with slurm.release_requeue_hold: false:
# the hold stands (still PENDING on BeginTime 15 s after the requeue; the run is cancelled there).
# usage: orchestrator_hold_release_test.sh BATON
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
export FAKE_STEP_SLEEP=0.3
show_field() { "$baton" show "$run" --no-sync --json | jq -r "$1"; }

require_idle_cluster
mkdir -p "$TMP/data"

# submit_named NAME EXTRA_SLURM_KEYS: the fake trainer's run NAME, submitted (lib.sh's submit
# sets run, job and run_dir).
submit_named() {
    cat >"$TMP/$1.yaml" <<YAML
run: {name: $1, steps: 60, seed: 0}
data: {path: data}
slurm: {partition: debug, cpus_per_task: $CPUS, time: "5:00", signal: USR1, signal_lead_s: 60$2}
checkpoint: {every: 5}
YAML
    submit "$TMP/$1.yaml"
}
# passed_step STEP: the run has logged step STEP or later.
passed_step() { local s; s=$(show_field .last_step); [[ $s != null ]] && ((s >= $1)); }
# preempt_after [STEP [RESTARTS]]: waits for the run to pass STEP (6), then starts the urgent
# job and waits for the job to be requeued with Restarts=RESTARTS (1); sets t_preempt (SECONDS).
# The hold is left to baton watch (lib.sh's preempt cuts it itself).
preempt_after() {
    local step=${1:-6} restarts=${2:-1}
    wait_for 60 "run $run to pass step $step" passed_step "$step"
    local urgent
    urgent=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J it-urgent -o /dev/null --wrap 'sleep 3')
    track_job "$urgent"
    t_preempt=$SECONDS
    wait_for 60 "job $job to be requeued (PENDING, Restarts=$restarts)" requeued "$job" "$restarts"
}
# first_step_again N: attempt N has logged a step.
first_step_again() {
    [[ $("$baton" attempts "$run" --no-sync --json | jq ".[$1].last_step // 0") -gt 0 ]]
}

# ------------------------------------------------------------------ released by baton watch
submit_named it-hold ""
# After the first submit: the database exists (two processes creating it at once collide).
"$baton" watch --interval 1 >"$TMP/watch.log" 2>&1 &
track_pid $!
ok "submitted run $run as job $job; baton watch running"
preempt_after
ok "job $job preempted and requeued by the launcher"
wait_for 60 "the next attempt's first step" first_step_again 1
took=$((SECONDS - t_preempt))
((took <= 20)) || fail "the next attempt's first step came $took s after the preemption (want <= 20)"
ok "the next attempt's first step came $took s after the preemption"
logged() { grep -q "run $run: job $job: requeue hold released (scontrol update JobId=$job StartTime=now)" "$TMP/watch.log"; }
wait_for 5 "baton watch to log the release" logged
ok "baton watch logged the release: $(grep -o 'requeue hold released.*' "$TMP/watch.log" | head -1)"
attempts=$("$baton" attempts "$run" --no-sync --json)
after=$(jq '.[0].hold_released_at - .[0].ended_at' <<<"$attempts")
awk -v a="$after" 'BEGIN { exit !(a >= 3 && a < 10) }' ||
    fail "attempt 0's hold released $after s after it ended (want >= slurm.release_hold_after_s 3): $attempts"
"$baton" attempts "$run" --no-sync | grep -q "requeue hold released after" ||
    fail "baton attempts does not show the release"
ok "the release is in the attempt history, $after s after attempt 0 ended"
# The second preemption, of the resumed attempt: released as fast.
preempt_after 30 2
wait_for 60 "the third attempt's first step" first_step_again 2
took=$((SECONDS - t_preempt))
((took <= 20)) || fail "the third attempt's first step came $took s after the second preemption (want <= 20)"
ok "the third attempt's first step came $took s after the second preemption"
completed() { [[ $(show_field .status) == COMPLETED ]]; }
wait_for 90 "run $run to complete" completed
attempts=$("$baton" attempts "$run" --no-sync --json)
[[ $(jq -r '[.[1].resume_mode, .[2].resume_mode] | join(" ")' <<<"$attempts") == "exact exact" ]] ||
    fail "attempts 1 and 2 did not resume exact"
ok "run $run COMPLETED after two preemptions, resumed exact each time"
# Where the time went: each released hold is its own bucket, ended when baton watch released it.
json=$("$baton" show "$run" --no-sync --json)
jq -e '.time as $t | .attempts as $a | (.attempts[-1].ended_at - .created_at) as $wall
    | (($t.buckets | add) - $wall | fabs) <= 0.01 * $wall
    and all([1, 2][]; ($t.attempts[.].buckets.requeue_hold - ($a[. - 1].hold_released_at - $a[. - 1].ended_at) | fabs) < 1e-6)
    and $t.buckets.requeue_hold < 20 and $t.checkpoint_interval.interruptions == 2' >/dev/null <<<"$json" ||
    fail "time buckets: $(jq -c '.time' <<<"$json")"
ok "time: the requeue holds are $(jq '.time.buckets.requeue_hold * 10 | round / 10' <<<"$json") s (released), ETTR $(jq '.time.ettr * 1000 | round / 10' <<<"$json") %"

# ------------------------------------------------------------------ slurm.release_requeue_hold: false
submit_named it-hold-off ", release_requeue_hold: false"
ok "submitted run $run as job $job with slurm.release_requeue_hold: false"
preempt_after
sleep 15
[[ $(job_field "$job" JobState) == PENDING && $(job_field "$job" Reason) == BeginTime ]] ||
    fail "job $job is $(job_field "$job" JobState) ($(job_field "$job" Reason)) 15 s after the requeue; the hold should stand"
[[ $("$baton" attempts "$run" --no-sync --json | jq '.[0].hold_released_at') == null ]] ||
    fail "a release was recorded for a run that turned it off"
! grep -q "run $run: .*requeue hold released" "$TMP/watch.log" || fail "baton watch released a hold it was told to keep"
ok "the hold stands with the release off (PENDING, BeginTime, 15 s after the requeue)"
"$baton" cancel "$run" >/dev/null
done_line
