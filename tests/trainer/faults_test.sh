#!/usr/bin/env bash
# Fault injection on checkpoints: kill -9 during a save (mid-file, before the manifest, before the
# rename), a truncated file, a flipped byte, a deleted manifest, a second SIGTERM during a save.
# `--resume auto` always picks the newest valid checkpoint and the run still ends identical to
# the uninterrupted one. usage: faults_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 24 5:12
export STEPS=8 EVERY=2
write_config "$tmp/full.yaml" "$tmp/full"
rc=0; train_ranks 1 --config "$tmp/full.yaml" || rc=$?
[ $rc -eq 0 ] || fail "uninterrupted run exited $rc"
ref=$tmp/full/checkpoints/checkpoint_step_8

newest_valid() { "$bt" ckpt list "$1" | awk '$2 == "valid" {print $1; exit}'; }

for fault in mid_file before_manifest before_rename; do
  run=$tmp/$fault
  write_config "$tmp/$fault.yaml" "$run"
  # The save at step 4 dies by SIGKILL; checkpoint_step_2 is the newest valid one.
  rc=0; train_ranks 1 --config "$tmp/$fault.yaml" --fault "$fault" --fault-at-step 4 || rc=$?
  [ $rc -eq 137 ] || fail "$fault: expected death by SIGKILL (137), got $rc"
  [ -d "$run/checkpoints/checkpoint_step_4.partial" ] || fail "$fault: no .partial left behind"
  [ ! -d "$run/checkpoints/checkpoint_step_4" ] || fail "$fault: a killed save must not be visible"
  [ "$(newest_valid "$run")" = 2 ] || fail "$fault: newest valid should be step 2"
  rc=0; train_ranks 1 --config "$tmp/$fault.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "$fault: resumed run exited $rc"
  grep -q '"mode":"exact","resume_warmup_steps":0,"skipped":\[\],"source":"trainer","step0":2' "$(events_file "$run" local 0)" ||
    grep -q '"step0":2' "$(events_file "$run" local 0)" || fail "$fault: resume did not start from step 2"
  same_checkpoint "$ref" "$run/checkpoints/checkpoint_step_8"
done

# Damaged complete checkpoints: stop at 6 (checkpoints 2, 4, 6), damage 6 (and 4), resume auto.
damage() {  # name command-on-checkpoint-6
  local name=$1 run=$tmp/$1; shift
  write_config "$tmp/$name.yaml" "$run"
  rc=0; train_ranks 1 --config "$tmp/$name.yaml" --stop-after 6 || rc=$?
  [ $rc -eq 75 ] || fail "$name: stop exited $rc"
  ( cd "$run/checkpoints/checkpoint_step_6" && eval "$@" )
  rc=0; "$bt" ckpt verify "$run/checkpoints/checkpoint_step_6" >/dev/null 2>&1 || rc=$?
  [ $rc -eq 65 ] || fail "$name: ckpt verify should reject the damaged checkpoint (got $rc)"
  rc=0; train_ranks 1 --config "$tmp/$name.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "$name: resumed run exited $rc"
  grep -q '"step0":4' "$(events_file "$run" local 0)" || fail "$name: should resume from step 4"
  grep -q 'checkpoint_step_6' "$tmp/train.log" || fail "$name: the skip was not logged"
  same_checkpoint "$ref" "$run/checkpoints/checkpoint_step_8"
}
damage truncated 'head -c 1000 optimizer.safetensors > x && mv x optimizer.safetensors'
damage flipped 'printf "\x01" | dd of=transformer/diffusion_pytorch_model.safetensors bs=1 seek=200 conv=notrunc status=none'
damage no_manifest 'rm MANIFEST.json'

# A second SIGTERM during the stop save exits at once; its .partial is never loaded. No periodic
# saves: a stop right after one has nothing new to save.
run=$tmp/term2
EVERY=100 write_config "$tmp/term2.yaml" "$run"
"$bt" train --config "$tmp/term2.yaml" --fault slow_save >>"$tmp/train.log" 2>&1 &
pid=$!
# Steps take milliseconds: poll finely, so the first TERM lands well before the last step.
ev=$(events_file "$run" local 0)
for _ in $(seq 3000); do grep -q '"step":1,"step_time_s"' "$ev" 2>/dev/null && break; sleep 0.01; done
kill -TERM $pid
# The stop save is the one that stays .partial (slow_save holds it 3 s before its manifest); a
# periodic save's .partial is renamed within milliseconds and must not be mistaken for it.
partial=""
for _ in $(seq 300); do
  partial=$(find "$run/checkpoints" -maxdepth 1 -name 'checkpoint_step_*.partial' 2>/dev/null | head -n1 || true)
  if [ -n "$partial" ]; then
    sleep 0.3
    [ -d "$partial" ] && break
    partial=""
  fi
  sleep 0.05
done
[ -n "$partial" ] || fail "term2: the stop save did not start"
t0=$(date +%s.%N)
kill -TERM $pid
rc=0; wait $pid || rc=$?
t1=$(date +%s.%N)
[ $rc -eq 143 ] || fail "term2: second SIGTERM should exit 143 at once, got $rc"
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 2.0 else 1)" || fail "term2: took too long to exit"
stopped=${partial%.partial}
[ ! -d "$stopped" ] || fail "term2: the interrupted save became visible"
checks=$((checks + 1)); echo "ok: a second SIGTERM during the save exits 143 at once, leaving only a .partial"
rc=0; train_ranks 1 --config "$tmp/term2.yaml" || rc=$?
[ $rc -eq 0 ] || fail "term2: resumed run exited $rc"
k=${stopped##*_}
python3 - "$(events_file "$run" local 0)" "$k" <<'PY' || fail "term2: the resume must start below the interrupted step"
import json, sys
starts = [json.loads(l) for l in open(sys.argv[1]) if '"segment_start"' in l]
assert len(starts) == 2 and starts[1]["step0"] < int(sys.argv[2]), (starts[1]["step0"], sys.argv[2])
PY
same_checkpoint "$ref" "$run/checkpoints/checkpoint_step_8"
echo "$checks passed, 0 failed"
