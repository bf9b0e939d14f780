# The one harness of the tests on the real dev cluster (slurm/dev_cluster.sh up). Sourced by
# tests/integration/*_test.sh, without arguments (it reads the script's own):
#   source lib.sh         with the script run as  X_test.sh BATON [BATON_TRAIN]
# Sets $baton, $bt (absolute paths; $bt empty without BATON_TRAIN), $SRC (the repository),
# $FAKE_TRAINER (tests/integration/fake_trainer.sh, the stand-in trainer, with FAKE_TRAINER_BATON
# exported for it), $TMP (a fresh folder, removed on exit unless BATON_KEEP_TMP=1 or a check
# failed and BATON_KEEP_TMP_ON_FAIL=1), BATON_HOME, and BATON_TRAIN_BIN: the real trainer when
# given, the fake one otherwise. Every job a test submits goes through track_job and every
# background process through track_pid, so the exit trap scancels and kills them. fail prints
# the runs, jobs and logs (and $TMP/watch.log, and what the test's own on_fail prints). The SLURM
# helpers every test script shares (job_field, wait_for, ...) come from tests/lib/slurm.sh.
# shellcheck shell=bash
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/slurm.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../common/run_folder.sh"

usage() { echo "usage: $0 BATON [BATON_TRAIN]" >&2; exit 2; }
(($# >= 1 && $# <= 2)) && [[ -x $1 ]] || usage
baton=$(realpath "$1")
SRC=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../..")
FAKE_TRAINER=$SRC/tests/integration/fake_trainer.sh
export FAKE_TRAINER_BATON=$baton
bt=""
if (($# == 2)); then
  [[ -x $2 ]] || usage
  bt=$(realpath "$2")
fi

TMP=$(mktemp -d /tmp/baton-it.XXXXXX)
chmod 0755 "$TMP"
export BATON_HOME=$TMP/home
export BATON_TRAIN_BIN=${bt:-$FAKE_TRAINER}
# Submitted jobs inherit the environment (sbatch exports it): keep test settings out of them.
unset BATON_NO_SRUN RANK WORLD_SIZE BATON_RDZV_FILE MASTER_ADDR MASTER_PORT
JOBS=()
BG_PIDS=()
checks=0
T0=$SECONDS
FAILED=0

cleanup() {
  local j
  # The test's background processes first: a baton watch left running would act on the jobs
  # being cancelled below.
  for j in "${BG_PIDS[@]}"; do kill "$j" 2>/dev/null || true; done
  for j in "${BG_PIDS[@]}"; do wait "$j" 2>/dev/null || true; done
  # A plain scancel's TERM reads as a preemption to the launcher, whose requeue would leave the
  # cluster busy for the next test: the job is made non-requeueable first.
  for j in "${JOBS[@]}"; do
    scontrol update jobid="$j" Requeue=0 2>/dev/null || true
    scancel "$j" 2>/dev/null || true
  done
  for j in "${REF_PIDS[@]}"; do kill "$j" 2>/dev/null || true; done
  if [[ ${BATON_KEEP_TMP:-0} == 1 || ($FAILED == 1 && ${BATON_KEEP_TMP_ON_FAIL:-0} == 1) ]]; then
    echo "kept $TMP" >&2
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT

track_job() { JOBS+=("$1"); }
# track_pid PID: a background process of the test (a baton watch, a receiver), killed on exit.
track_pid() { BG_PIDS+=("$1"); }
ok() { checks=$((checks + 1)); printf 'ok    [%3ds] %s\n' $((SECONDS - T0)) "$*"; }
note() { printf '      [%3ds] %s\n' $((SECONDS - T0)) "$*"; }

# fail MESSAGE: prints what helps to debug (runs, attempts, job states, job logs, baton watch's
# log, then the test's own on_fail if it defines one) and exits 1.
fail() {
  FAILED=1
  printf 'FAIL  [%3ds] %s\n' $((SECONDS - T0)) "$*" >&2
  local r j f
  for r in $("$baton" ls --json --no-sync 2>/dev/null | jq -r '.[].id' 2>/dev/null); do
    "$baton" show "$r" --no-sync >&2 2>&1 || true
  done
  for j in "${JOBS[@]}"; do scontrol -o show job "$j" 2>/dev/null | cut -c1-400 >&2 || true; done
  for f in "$BATON_HOME"/runs/*/logs/*.out; do
    [[ -e $f ]] && { printf -- '--- %s (last 40 lines)\n' "$f" >&2; tail -n 40 "$f" >&2; }
  done
  [[ -f $TMP/watch.log ]] && { printf -- '--- baton watch (last 60 lines)\n' >&2; tail -n 60 "$TMP/watch.log" >&2; }
  if declare -F on_fail >/dev/null; then on_fail >&2 || true; fi
  exit 1
}

# require_idle_cluster: the controller answers and no job runs (the preemption tests need every
# CPU). Waits up to BATON_IT_IDLE_WAIT (120) s for other jobs to finish; exits 2 otherwise.
require_idle_cluster() {
  require_cluster_up
  CPUS=$(sinfo -h -p debug -o '%c' | head -n1)
  [[ $CPUS =~ ^[0-9]+$ ]] || { echo "FAIL  no debug partition (sinfo)" >&2; exit 2; }
  wait_cluster_idle "${BATON_IT_IDLE_WAIT:-120}"
  ok "cluster up and idle, ${CPUS} CPUs"
}

# make_dataset DIR: the trainer tests' tiny dataset (24 episodes, F 5..12, 4x4 latents).
make_dataset() {
  "$bt" synth-data --out "$1" --episodes 24 --seed 7 --frames 5:12 --height 4 --width 4 \
    --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null
}

# write_config FILE NAME STEPS [extra yaml lines...]: a tiny model (dim 24, 1 layer) on
# $TMP/ds; the "slurm:" block is left to the caller. $IT_TRAIN replaces the "train:" mapping.
write_config() {
  local file=$1 name=$2 steps=$3
  shift 3
  {
    echo "run: {name: $name, steps: $steps, seed: 11}"
    echo "data: {path: $TMP/ds, batch_size: 4, pad_multiple: 4, pool_factor: 2}"
    echo "model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}"
    echo "optim: {lr: 2.0e-3, warmup_steps: 3, grad_accum: 2, shard: ${IT_SHARD:-none}}"
    local train_keys="{dtype: float32, log_every: 10}"
    echo "train: ${IT_TRAIN:-$train_keys}"
    local line
    for line in "$@"; do echo "$line"; done
  } >"$file"
}

# submit CFG: baton submit --json; sets $run, $job, $run_dir and tracks the job.
submit() {
  local out
  out=$("$baton" submit "$1" --json) || fail "baton submit $1 failed"
  run=$(jq -r .run_id <<<"$out")
  job=$(jq -r .job_id <<<"$out")
  run_dir=$(jq -r .run_dir <<<"$out")
  [[ $run =~ ^[0-9]+$ && $job =~ ^[0-9]+$ && -d $run_dir ]] || fail "submit printed: $out"
  track_job "$job"
}

# last_step_in FILE: the highest 0-based step index logged in an events file (-1 if none).
last_step_in() {
  local s
  s=$(grep -h '"type":"step"' "$1" 2>/dev/null | tail -n1 | jq -r .step 2>/dev/null) || true
  echo "${s:--1}"
}
# attempt_progressed RUN_DIR JOB RESTART MIN_STEP: attempt JOB.RESTART logged step >= MIN_STEP.
attempt_progressed() {
  local s
  s=$(last_step_in "$(events_file "$1" "$2" "$3")")
  ((s >= $4))
}
# attempt_advanced RUN_DIR JOB RESTART N: attempt JOB.RESTART logged N steps past its step0.
attempt_advanced() {
  local f s0
  f=$(events_file "$1" "$2" "$3")
  s0=$(grep -h '"type":"attempt_start"' "$f" 2>/dev/null | jq -r .step0 2>/dev/null) || true
  [[ -n $s0 ]] && (($(last_step_in "$f") >= s0 + $4))
}
# attempt_finished RUN_DIR JOB RESTART: the launcher closed the attempt (attempt_end written).
attempt_finished() { grep -q '"type":"attempt_end"' "$(events_file "$1" "$2" "$3")" 2>/dev/null; }

# requeued JOB N: the job is PENDING again with Restarts=N.
requeued() { [[ $(job_field "$1" JobState) == PENDING && $(job_field "$1" Restarts) == "$2" ]]; }

requeued_not_done() {
  [[ $(job_field "$1" JobState) != COMPLETED ]] ||
    fail "job $1 COMPLETED before the preemption landed: raise the run's steps (BATON_IT_STEPS)"
  requeued "$@"
}

# preempt JOB RESTARTS_AFTER: submits an `urgent` job that needs every CPU, waits until JOB is
# requeued (PENDING, Restarts=RESTARTS_AFTER) and cuts SLURM's ~121 s requeue hold with
# `scontrol update StartTime=now` (docs/slurm_dev_cluster.md). The urgent job sleeps 2 s.
preempt() {
  local target=$1 restarts=$2 urgent
  urgent=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J baton-it-urgent -o /dev/null --wrap 'sleep 2') ||
    fail "sbatch to urgent failed"
  track_job "$urgent"
  wait_for 90 "job $target to be requeued (PENDING, Restarts=$restarts)" requeued_not_done "$target" "$restarts"
  release_now "$target"
}

# release_now JOB: `scontrol update jobid=JOB StartTime=now` for a job that is PENDING after a
# requeue, one second after it was seen PENDING. Not sooner: slurmd refuses to launch a job whose
# credential is not newer (in whole seconds) than the revocation of its previous run ("Killing
# non-startable batch JobId=N: Job credential revoked" in slurmctld.log, and the job ends FAILED
# without running). The hold SLURM itself applies (cred_expire + 1 s) exists for this reason.
release_now() {
  sleep 1
  scontrol update jobid="$1" StartTime=now || fail "scontrol update jobid=$1 StartTime=now failed"
}

# release_held JOB...: for each JOB waiting on its requeue hold (PENDING, Reason=BeginTime),
# `scontrol update StartTime=now`. Call it in a polling loop.
release_held() {
  local j
  for j in "$@"; do
    if [[ $(job_field "$j" JobState) == PENDING && $(job_field "$j" Reason) == BeginTime ]]; then
      sleep 1 # see release_now
      scontrol update jobid="$j" StartTime=now 2>/dev/null || true
    fi
  done
}

# run_status RUN: the run's status after ingest + reconcile.
run_status() { "$baton" show "$1" --json 2>/dev/null | jq -r .status; }
# run_is RUN STATUS...: the run has one of these statuses.
run_is() {
  local s w
  s=$(run_status "$1")
  shift
  for w in "$@"; do [[ $s == "$w" ]] && return 0; done
  return 1
}

# start_reference CFG RUN_DIR WORLD THREADS [RESUME]: in the background, the same config
# uninterrupted, outside SLURM, on WORLD ranks (a FileStore rendezvous, as tests/trainer/common.sh
# does) with THREADS intra-op threads per rank, as SLURM_CPUS_PER_TASK gives the job's ranks.
# RESUME (default none) is the trainer's --resume: auto continues a checkpoint put in RUN_DIR.
# finish_reference waits for it. It runs alongside the SLURM job (timing does not change results).
REF_PIDS=()
start_reference() {
  local cfg=$1 dir=$2 world=$3 threads=$4 resume=${5:-none} r
  local store="$TMP/rdzv.$RANDOM.$RANDOM"
  for ((r = 0; r < world; r++)); do
    env -u SLURM_JOB_ID -u SLURM_PROCID -u SLURM_STEP_ID -u SLURM_NTASKS SLURM_CPUS_PER_TASK="$threads" \
      RANK=$r WORLD_SIZE="$world" BATON_RDZV_FILE="$store" \
      "$bt" train --config "$cfg" --run-dir "$dir" --resume "$resume" >>"$TMP/reference.$r.log" 2>&1 &
    REF_PIDS+=($!)
  done
}
finish_reference() {
  local p rc
  for p in "${REF_PIDS[@]}"; do
    rc=0
    wait "$p" || rc=$?
    ((rc == 0)) || { tail -n 20 "$TMP"/reference.*.log >&2; fail "the uninterrupted reference run exited $rc"; }
  done
  REF_PIDS=()
}

# same_final_state A B: weights and every AdamW tensor, bit for bit, whether the optimizer state is
# one file or one per rank (optim.shard).
same_final_state() {
  local out
  out=$("${BATON_PYTHON:-/usr/bin/python3}" "$(dirname "${BASH_SOURCE[0]}")/../trainer/ckpt_state.py" "$1" "$2" 0 2>&1) ||
    fail "final state differs: $1 vs $2: $out"
  note "$out"
}

# effective_steps RUN_DIR: "step lr loss grad_norm" per step index; a later attempt's row
# replaces an earlier one (superseded rows), so this is the series that led to the final weights
# (tests/lib/effective_steps.py, shared with the trainer tests).
effective_steps() { python3 "$(dirname "${BASH_SOURCE[0]}")/../lib/effective_steps.py" "$1"; }

done_line() { echo "PASS $(basename "$0" .sh): $checks checks in $((SECONDS - T0)) s"; }
