#!/usr/bin/env bash
# The main job, end to end on this machine (Debian 12, as root, from a fresh clone):
#   set-up and build; the single-node SLURM dev cluster; a tiny synthetic dataset; a real training
#   run submitted with `baton submit configs/demo.yaml`; a preemption by an `urgent` job that
#   needs every CPU (the launcher forwards the signal, the trainer checkpoints and exits 75, the
#   launcher requeues the same job id); SLURM's ~2 min requeue hold cut short by the `baton watch`
#   running beside it (slurm.release_requeue_hold); an `exact` resume; the run trained to its
#   target; its history.
# Takes a few minutes (mostly the first build). Exit 0 when the run COMPLETED after at least one
# preemption and an exact resume; non-zero otherwise.
#   BATON_HOME        where runs and the database live (default ~/.baton)
#   DEMO_PREEMPT_AT   preempt once the run has logged this many steps (default 60)
#   DEMO_TIMEOUT_S    give up after this many seconds of training (default 900)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh

root=$(pwd)
baton=$root/build/orchestrator/baton
bt=$root/build/trainer/baton-train
cfg=configs/demo.yaml
data=out/demo-tiny-data
preempt_at=${DEMO_PREEMPT_AT:-60}
timeout_s=${DEMO_TIMEOUT_S:-900}
t0=$SECONDS
say() { printf '== [%4ds] %s\n' $((SECONDS - t0)) "$*"; }
die() {
  printf '== [%4ds] FAILED: %s\n' $((SECONDS - t0)) "$*" >&2
  if [[ -n ${run:-} ]]; then
    "$baton" show "$run" >&2 || true
    [[ -n ${run_dir:-} ]] && tail -n 30 "$run_dir/logs/$job.out" >&2 2>/dev/null || true
  fi
  exit 1
}
job_field() { scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }

say "SLURM dev cluster (slurm/dev_cluster.sh up)"
bash slurm/dev_cluster.sh up
cpus=$(sinfo -h -p debug -o '%c' | head -n1)
busy=$(squeue -h -t RUNNING,PENDING,COMPLETING -o '%i' | wc -l)
((busy == 0)) || say "note: $busy other job(s) on the cluster; the urgent job may preempt them too"

say "synthetic dataset -> $data"
# A folder from an older baton lacks the empty prompt that text dropout needs: write it anew.
if [[ ! -f $data/meta/episodes.jsonl || ! -f $data/meta/empty_text.safetensors ]]; then
  rm -rf "$data"
  "$bt" synth-data --out "$data" --episodes 96 --seed 0 --frames 8:24 --height 4 --width 4
else
  echo "already there"
fi
"$bt" data-check --data "$data" --batch-size 4 --pad-multiple 8 --seed 0

say "run config $cfg"
if ((cpus < 2)); then # a 1-CPU node: the same run on 1 CPU
  mkdir -p out
  sed -e 's/cpus_per_task: 2/cpus_per_task: 1/' -e "s|path: ../out/demo-tiny-data|path: $root/$data|" \
    "$cfg" >out/demo.yaml
  cfg=out/demo.yaml
fi
"$baton" validate "$cfg"

say "baton submit $cfg"
out=$("$baton" submit "$cfg" --json)
run=$(jq -r .run_id <<<"$out")
job=$(jq -r .job_id <<<"$out")
run_dir=$(jq -r .run_dir <<<"$out")
urgent=""
# baton watch: ingests and reconciles in the background, and releases the requeue hold once the
# preempted attempt ended cleanly (docs/orchestrator.md).
watch_log=$(mktemp /tmp/baton-demo-watch.XXXXXX)
"$baton" watch --interval 2 >"$watch_log" 2>&1 &
watch_pid=$!
cleanup() {
  local rc=$?
  kill "$watch_pid" 2>/dev/null || true
  wait "$watch_pid" 2>/dev/null || true
  if ((rc != 0)) && [[ -n ${run:-} ]] && [[ $("$baton" show "$run" --json 2>/dev/null | jq -r .status) =~ ^(PENDING|RUNNING|REQUEUED)$ ]]; then
    echo "== cancelling run $run (job $job)" >&2
    "$baton" cancel "$run" >&2 || true
  fi
  [[ -n $urgent ]] && scancel "$urgent" 2>/dev/null || true
  rm -f "$watch_log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say "run $run is SLURM job $job; run folder $run_dir"
target=$(jq -r .target_steps <<<"$("$baton" show "$run" --json --no-sync)")

# progress: prints a line when the run's status or attempt changes, else every 10 s (baton show
# ingests the trainer's event files and reconciles the job with SLURM); sets $status and $step.
last_key="" last_print=0
progress() {
  local j attempt key
  j=$("$baton" show "$run" --json 2>/dev/null) || return 0
  status=$(jq -r .status <<<"$j")
  step=$(jq -r '.last_step // 0' <<<"$j")
  attempt=$(($(jq '.attempts | length' <<<"$j") - 1))
  key="$status $attempt"
  if [[ $key != "$last_key" ]] || ((SECONDS - last_print >= 10)); then
    local which="attempt $attempt"
    ((attempt >= 0)) || which="no attempt yet"
    say "run $run: $status, step $step/$target, $which (job $job: SLURM $(job_field "$job" JobState))"
    last_key=$key last_print=$SECONDS
  fi
}
deadline=$((SECONDS + timeout_s))
wait_until() { # wait_until DESCRIPTION COMMAND...: polls every 2 s, printing progress
  local what=$1
  shift
  until "$@"; do
    ((SECONDS < deadline)) || die "timed out waiting for $what"
    progress
    [[ ${status:-} =~ ^(FAILED|CANCELLED)$ ]] && die "run $run ended $status"
    sleep 2
  done
}

say "training; it will be preempted once it passes step $preempt_at"
past() { progress; ((${step:-0} >= preempt_at)); }
wait_until "step $preempt_at" past
[[ $status == COMPLETED ]] && die "the run completed before it could be preempted"

say "preempting: an urgent-partition job that needs all $cpus CPUs"
urgent=$(sbatch --parsable -p urgent -c "$cpus" -t 2 -J demo-urgent -o /dev/null --wrap 'sleep 5')
say "urgent job $urgent submitted; SLURM signals the run's launcher (USR1), which forwards it to the trainer"
requeued() { [[ $(job_field "$job" JobState) == PENDING && $(job_field "$job" Restarts) == 1 ]]; }
wait_until "job $job to be requeued" requeued
say "job $job is PENDING again under the same id (Restarts=1): the trainer checkpointed and exited 75, the launcher ran scontrol requeue"
grep -h '"reason":"signal"' "$run_dir"/events/"$job".0.jsonl | grep '"type":"checkpoint"' |
  jq -r '"   signal checkpoint: step \(.step), \(.bytes) bytes in \(.seconds * 1000 | floor) ms"' || true
say "SLURM holds a requeued job ~121 s (until $(job_field "$job" EligibleTime)); baton watch releases it slurm.release_hold_after_s (3 s) after the attempt ended cleanly"
running_again() { [[ $(job_field "$job" JobState) == RUNNING || $(job_field "$job" JobState) == COMPLETED ]]; }
wait_until "job $job to start again after the urgent job" running_again
say "job $job running again (restart 1) once the urgent job finished"
grep -h "requeue hold released" "$watch_log" | sed 's/^/   baton watch: /' || say "note: baton watch did not release the hold (see $watch_log)"

say "training to step $target"
done_() { progress; [[ $status == COMPLETED ]]; }
wait_until "run $run to complete" done_

echo
say "baton show $run"
"$baton" show "$run"
echo
say "baton attempts $run"
"$baton" attempts "$run"
echo
attempts=$("$baton" attempts "$run" --json)
n=$(jq length <<<"$attempts")
resumed=$(jq -r '[.[1:][] | .resume_mode] | unique | join(",")' <<<"$attempts")
((n >= 2)) || die "expected at least 2 attempts, got $n"
[[ $resumed == exact ]] || die "later attempts resumed '$resumed', expected exact"
[[ $(jq -r '.[0].end_reason' <<<"$attempts") == preempted ]] || die "attempt 0 was not preempted"
say "run $run COMPLETED: $target steps over $n attempts of job $job, preempted and resumed exact"
echo "   history is in ${BATON_HOME:-$HOME/.baton}/baton.db; try: $baton ls, $baton checkpoints $run"
echo "   the web page with its LR curve, attempt boundaries and warmups: $baton serve  (then open http://127.0.0.1:8080/)"
