#!/usr/bin/env bash
# Issue 5, "must show" 3, on the real dev cluster: a trainer that crashes at start is not requeued
# forever, and a config or data error is not requeued at all.
#   crash-loop   trainer exits 1 at start, max_failures 10 -> the crash-loop guard stops it after
#                3 attempts without a step: FAILED (no_progress), job Restarts=2
#   crash-budget trainer dies of SIGSEGV at start, max_failures 1, no restarts inside the job
#                (slurm.in_job_restarts 0) -> 1 crash requeue, then FAILED (failure_budget), job
#                Restarts=1
#   bad-yaml     run.yaml made invalid after submit -> the launcher fails it: 78, config_error
#   bad-model    a config the trainer rejects (patch size 3 on 4x4 latents) -> 78, config_error
#   no-data      the dataset's meta/episodes.jsonl removed after submit -> the trainer exits 65,
#                data_error
# The last three: one attempt, SLURM job FAILED with Restarts=0 (never requeued).
# To edit run folders "after submit" without racing the job's start, a blocker job holds every
# CPU while the runs are submitted; the requeue hold is cut with StartTime=now as jobs come back.
# usage: failure_policy_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"

require_idle_cluster
make_dataset "$TMP/ds"
cp -r "$TMP/ds" "$TMP/ds-vanishing"
slurm="slurm: {partition: debug, cpus_per_task: 1, time: \"5:00\""

blocker=$(sbatch --parsable -p debug -c "$CPUS" -t 5 -J baton-it-blocker -o /dev/null --wrap 'sleep 300')
track_job "$blocker"
wait_for 30 "the blocker job to run" bash -c "[[ \$(squeue -h -j $blocker -o %T) == RUNNING ]]"

declare -A RUN JOB DIR
submit_as() { # submit_as KEY CFG [env...]
  local key=$1 cfg=$2
  shift 2
  local out
  out=$(env "$@" "$baton" submit "$cfg" --json) || fail "submit $key failed"
  RUN[$key]=$(jq -r .run_id <<<"$out")
  JOB[$key]=$(jq -r .job_id <<<"$out")
  DIR[$key]=$(jq -r .run_dir <<<"$out")
  track_job "${JOB[$key]}"
}
write_config "$TMP/crash-loop.yaml" crash-loop 20 "$slurm, max_failures: 10}"
submit_as crash-loop "$TMP/crash-loop.yaml" BATON_TRAIN_BIN="$FAKE_TRAINER" FAKE_CRASH=exit
# in_job_restarts 0: the budget of requeues is what this run tests (restarts inside the job are
# hang_restart_test.sh's).
write_config "$TMP/crash-budget.yaml" crash-budget 20 "$slurm, max_failures: 1, in_job_restarts: 0}"
submit_as crash-budget "$TMP/crash-budget.yaml" BATON_TRAIN_BIN="$FAKE_TRAINER" FAKE_CRASH=segv
write_config "$TMP/bad-yaml.yaml" bad-yaml 20 "$slurm}"
submit_as bad-yaml "$TMP/bad-yaml.yaml"
write_config "$TMP/bad-model.yaml" bad-model 20 "$slurm}" "model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16, patch_size: 3}"
sed -i '/^model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}$/d' "$TMP/bad-model.yaml"
submit_as bad-model "$TMP/bad-model.yaml"
write_config "$TMP/no-data.yaml" no-data 20 "$slurm}"
sed -i "s|path: $TMP/ds,|path: $TMP/ds-vanishing,|" "$TMP/no-data.yaml"
submit_as no-data "$TMP/no-data.yaml"
for k in "${!JOB[@]}"; do
  [[ $(job_field "${JOB[$k]}" JobState) == PENDING ]] || fail "job of $k started before the blocker ended"
done
ok "5 runs submitted behind a blocker job: ${!RUN[*]}"

# "After submit": break the frozen config of one run and the dataset of another.
printf 'run: {steps: [not, a, number]\n' >>"${DIR[bad-yaml]}/run.yaml"
rm "$TMP/ds-vanishing/meta/episodes.jsonl"
scancel "$blocker"

terminal() {
  local k
  release_held "${JOB[@]}"
  for k in "${!RUN[@]}"; do run_is "${RUN[$k]}" FAILED COMPLETED CANCELLED || return 1; done
}
wait_for 240 "every run to end" terminal
sleep 3 # nothing must come back: no job may be pending or running again
release_held "${JOB[@]}"
for k in "${!JOB[@]}"; do
  st=$(job_field "${JOB[$k]}" JobState)
  [[ $st == FAILED ]] || fail "job of $k is $st after its run ended, want FAILED"
done
ok "every run ended and no job is pending or running again"

# check KEY N_ATTEMPTS RESTARTS REASONS...: the run FAILED after N attempts with these end reasons.
check() {
  local key=$1 n=$2 restarts=$3
  shift 3
  local r=${RUN[$key]} attempts got
  [[ $(run_status "$r") == FAILED ]] || fail "$key: run $r is $(run_status "$r"), want FAILED"
  attempts=$("$baton" attempts "$r" --json)
  got=$(jq -r '[.[].end_reason] | join(" ")' <<<"$attempts")
  [[ $(jq length <<<"$attempts") == "$n" && $got == "$*" ]] ||
    fail "$key: $(jq length <<<"$attempts") attempts ending '$got', want $n ending '$*'"
  [[ $(job_field "${JOB[$key]}" Restarts) == "$restarts" ]] ||
    fail "$key: job Restarts=$(job_field "${JOB[$key]}" Restarts), want $restarts"
  [[ $(jq -r '.[-1].action' <<<"$attempts") == fail ]] || fail "$key: the last attempt's action is not fail"
  ok "$key: FAILED after $n attempt(s) ($*), SLURM Restarts=$restarts, exit codes $(jq -r '[.[].exit_code] | join(" ")' <<<"$attempts")"
}
check crash-loop 3 2 crashed crashed no_progress
check crash-budget 2 1 crashed failure_budget
check bad-yaml 1 0 config_error
check bad-model 1 0 config_error
check no-data 1 0 data_error
[[ $(job_field "${JOB[bad-yaml]}" ExitCode) == 78:0 && $(job_field "${JOB[bad-model]}" ExitCode) == 78:0 &&
  $(job_field "${JOB[no-data]}" ExitCode) == 65:0 ]] ||
  fail "job exit codes $(job_field "${JOB[bad-yaml]}" ExitCode) $(job_field "${JOB[bad-model]}" ExitCode) $(job_field "${JOB[no-data]}" ExitCode), want 78:0 78:0 65:0"
ok "config errors end their jobs with exit 78, the data error with 65"
grep -q "patch_size" "${DIR[bad-model]}/logs/${JOB[bad-model]}.out" || fail "bad-model's log does not name model.patch_size"
grep -q "episodes.jsonl" "${DIR[no-data]}/logs/${JOB[no-data]}.out" || fail "no-data's log does not name the missing file"
ok "the job logs name the bad key and the missing file"
"$baton" show "${RUN[crash-loop]}"
reason=$("$baton" show "${RUN[crash-loop]}" --json | jq -r .reason)
[[ -n $reason ]] || fail "crash-loop has no reason"
ok "crash-loop reason: $reason"
done_line
