#!/usr/bin/env bash
# A stand-in for `baton-train train` in the orchestrator's integration tests: same command line,
# same events (docs/events.md), same checkpoint folders (checkpoint_step_N, written under
# .partial and renamed, MANIFEST.json via `baton manifest write`), same exit codes — and no
# libtorch, so a "step" takes FAKE_STEP_SLEEP seconds.
#
# usage: fake_trainer.sh train --config RUN_YAML --run-dir DIR --resume CKPT|none
#          --expect-mode MODE --expect-step0 N --resume-warmup K --events FILE
# Environment:
#   FAKE_TRAINER_BATON   the baton binary (for `baton manifest write`), required
#   FAKE_STEP_SLEEP      seconds per step (default 0.2)
#   FAKE_CRASH=exit      print a message and exit 1 at start, before reading any argument (a
#                        crash loop); FAKE_CRASH=segv dies of SIGSEGV there instead, as a crash in
#                        native code would
# On SIGUSR1/SIGTERM: finish the current step, checkpoint, segment_end, exit 75.
set -uo pipefail

case ${FAKE_CRASH:-} in
'') ;;
exit) echo "fake_trainer: $* -> crashing at start as asked (FAKE_CRASH=exit)" >&2; exit 1 ;;
segv) echo "fake_trainer: $* -> crashing at start as asked (FAKE_CRASH=segv)" >&2; kill -SEGV $$ ;;
*) echo "fake_trainer: FAKE_CRASH must be exit or segv, not '$FAKE_CRASH'" >&2; exit 64 ;;
esac

die() { echo "fake_trainer: $*" >&2; exit "${2:-64}"; }
[[ ${1:-} == train ]] || die "only the 'train' subcommand is faked"
shift
config="" run_dir="" resume="" mode="" step0="" warm="" events=""
while (($# >= 2)); do
    case $1 in
    --config) config=$2 ;;
    --run-dir) run_dir=$2 ;;
    --resume) resume=$2 ;;
    --expect-mode) mode=$2 ;;
    --expect-step0) step0=$2 ;;
    --resume-warmup) warm=$2 ;;
    --events) events=$2 ;;
    *) die "unknown option $1" ;;
    esac
    shift 2
done
(($# == 0)) || die "stray argument $1"
for v in config run_dir resume mode step0 warm events; do
    [[ -n ${!v} ]] || die "missing --${v//_/-}"
done
baton=${FAKE_TRAINER_BATON:?set FAKE_TRAINER_BATON to the baton binary}

# run.steps and checkpoint.every from the frozen run.yaml (written by baton's ToYaml).
yaml_key() { awk -v sec="$1:" -v key="$2:" '$0 == sec {in_sec = 1; next} /^[a-z]/ {in_sec = 0}
    in_sec && $1 == key {print $2; exit}' "$config"; }
target=$(yaml_key run steps)
every=$(yaml_key checkpoint every)
[[ $target =~ ^[0-9]+$ && $every =~ ^[0-9]+$ ]] || die "cannot read run.steps/checkpoint.every from $config" 78

# Refuse a decision that contradicts the checkpoint, as the real trainer does.
if [[ $resume == none ]]; then
    [[ $mode == fresh && $step0 == 0 ]] || die "--resume none needs --expect-mode fresh --expect-step0 0" 78
else
    [[ -f $resume/MANIFEST.json ]] || die "$resume has no MANIFEST.json" 65
    [[ ${resume##*checkpoint_step_} == "$step0" ]] || die "$resume is not step $step0" 78
    [[ $mode == exact ]] || die "a full checkpoint resumes exact, not $mode" 78
fi

now() { date +%s.%N; }
# One printf per record: a single write() with O_APPEND, like EventWriter.
emit() { printf '%s\n' "$1" >>"$events"; }
job=${SLURM_JOB_ID:-local}
restart=${SLURM_RESTART_COUNT:-0}
ckpt_json=null
[[ $resume != none ]] && ckpt_json="\"$resume\""

stop=""
trap 'stop=USR1' USR1
trap 'stop=TERM' TERM

emit "{\"type\":\"segment_start\",\"time\":$(now),\"source\":\"trainer\",\"mode\":\"$mode\",\"step0\":$step0,\"target_steps\":$target,\"resume_warmup_steps\":$warm,\"warmup_until\":$((step0 + warm + 1)),\"checkpoint\":$ckpt_json,\"world_size\":1,\"config_hash\":\"fake\",\"job_id\":\"$job\",\"restart_count\":$restart}"

checkpoint() { # checkpoint STEP REASON
    local s=$1 reason=$2 d="$run_dir/checkpoints/checkpoint_step_$1" t0
    t0=$(now)
    rm -rf "$d.partial"
    mkdir -p "$d.partial/transformer"
    printf 'fake weights at step %s\n' "$s" >"$d.partial/transformer/diffusion_pytorch_model.safetensors"
    printf '{"fake": true}\n' >"$d.partial/transformer/config.json"
    printf 'fake optimizer state at step %s\n' "$s" >"$d.partial/optimizer.safetensors"
    printf '{"step": %s}\n' "$s" >"$d.partial/trainer_state.json"
    "$baton" manifest write "$d.partial" --step "$s" --kind full || die "manifest write failed" 74
    rm -rf "$d"
    mv "$d.partial" "$d"
    emit "{\"type\":\"checkpoint\",\"time\":$(now),\"source\":\"trainer\",\"step\":$s,\"path\":\"$d\",\"bytes\":64,\"seconds\":$(awk -v a="$(now)" -v b="$t0" 'BEGIN{printf "%.3f", a-b}'),\"reason\":\"$reason\"}"
}

step=$step0
last_ckpt=$step0
while ((step < target)); do
    sleep "${FAKE_STEP_SLEEP:-0.2}" &
    wait $! || true # returns early when a trapped signal arrives; the step still finishes
    # Like the trainer: the event names the step's 0-based index, $step then counts it finished.
    index=$step
    step=$((step + 1))
    in_warmup=false
    ((index < step0 + warm)) && in_warmup=true
    emit "{\"type\":\"step\",\"time\":$(now),\"source\":\"trainer\",\"step\":$index,\"lr\":0.001,\"loss\":$(awk -v s="$step" 'BEGIN{printf "%.6f", 1/(1+s)}'),\"loss_video\":0.5,\"loss_action\":0.5,\"grad_norm\":1.0,\"tokens\":1024,\"padded_tokens\":1100,\"samples\":4,\"valid_frames\":32,\"padded_frames\":36,\"step_time_s\":${FAKE_STEP_SLEEP:-0.2},\"tokens_per_s\":5000,\"in_warmup\":$in_warmup,\"epoch\":0}"
    if ((step % every == 0 || step == target)); then
        reason=periodic
        ((step == target)) && reason=final
        checkpoint "$step" "$reason"
        last_ckpt=$step
    fi
    if [[ -n $stop ]]; then
        ((last_ckpt == step)) || checkpoint "$step" signal
        emit "{\"type\":\"segment_end\",\"time\":$(now),\"source\":\"trainer\",\"step\":$step,\"reason\":\"signal\",\"signal\":\"$stop\",\"exit_code\":75}"
        exit 75
    fi
done
emit "{\"type\":\"segment_end\",\"time\":$(now),\"source\":\"trainer\",\"step\":$step,\"reason\":\"completed\",\"signal\":null,\"exit_code\":0}"
exit 0
