#!/usr/bin/env bash
# Sharded master weights (optim.master: sharded): a bf16 run with bf16 compute copies and each
# float32 master on its owner is bit for bit today's bf16 optim.shard optimizer run (replicated
# master) at 1, 2 and 3 ranks, with and without activation checkpointing (which itself changes
# no bit, in either layout): the same per-step lr,
# loss and grad norm, the same master weights and AdamW state. float64 matches too. A checkpoint
# written under one layout resumes exactly under the other (bit for bit against a run that never
# stopped) and on another rank count; a layout the config cannot hold is refused with 78. A split
# parameter's bf16 gradient lives only until the next one arrives, and a step abandoned in its
# backward leaves nothing behind.
# usage: master_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
PY=${BATON_PYTHON:-/usr/bin/python3}
cmp_state() { "$PY" "$(dirname "$0")/ckpt_state.py" "$@"; }
make_dataset "$tmp/ds" 24 5:12
last() { ls -d "$1"/checkpoints/checkpoint_step_* | sort -t_ -k3 -n | tail -1; }

# same_run A B WHAT: equal step logs (repr of lr, loss, grad norm) and equal final state, bit
# for bit.
same_run() {
  local a=$1 b=$2 what=$3 out
  [ -n "$(effective_steps "$a")" ] || fail "$what: no step rows in $a"
  diff <(effective_steps "$a") <(effective_steps "$b") >"$tmp/steps.diff" ||
    fail "$what: step logs differ: $(head -4 "$tmp/steps.diff")"
  out=$(cmp_state "$(last "$a")" "$(last "$b")" 0) || fail "$what: state differs: $out"
  checks=$((checks + 1)); echo "ok: $what: same step log and state bit for bit ($out)"
}

# 1. bf16: sharded master == replicated master, W = 1, 2, 3, with and without checkpointing.
for act in none blocks+attention; do
  for world in 1 2 3; do
    tag=$world${act%%+*}
    SHARD=optimizer DTYPE=bfloat16 STEPS=4 ACT=$act write_config "$tmp/rep$tag.yaml" "$tmp/rep$tag"
    SHARD=optimizer MASTER=sharded DTYPE=bfloat16 STEPS=4 ACT=$act \
      write_config "$tmp/sh$tag.yaml" "$tmp/sh$tag"
    for run in rep sh; do
      rc=0; train_ranks "$world" --config "$tmp/$run$tag.yaml" || rc=$?
      [ $rc -eq 0 ] || fail "$run on $world rank(s), checkpointing $act, exited $rc: $(tail -3 "$tmp/train.log")"
    done
    same_run "$tmp/rep$tag" "$tmp/sh$tag" "bf16, $world rank(s), checkpointing $act, master sharded vs replicated"
  done
done
# Activation checkpointing changes how a bf16 run computes, never what (autocast's cached casts
# of a recomputed block do not outlive its backward).
for world in 1 2; do
  same_run "$tmp/rep${world}none" "$tmp/rep${world}blocks" "bf16, $world rank(s), master replicated, checkpointing none vs blocks+attention"
done
# The masters are really split: each of 3 ranks wrote the transformer/ file of its own masters.
n=$(python3 -c 'import json, sys; print(len(set(json.load(open(sys.argv[1]))["weight_map"].values())))' \
  "$tmp/sh3none/checkpoints/checkpoint_step_4/transformer/diffusion_pytorch_model.safetensors.index.json")
[ "$n" = 3 ] || fail "a 3-rank sharded-master checkpoint's weights are in $n file(s), expected 3"
checks=$((checks + 1)); echo "ok: 3 ranks each wrote their masters' file"

# 2. float64 (no bf16 copy; the master is sharded and gathered): equal to replicated.
SHARD=gradients DTYPE=float64 STEPS=4 write_config "$tmp/f64rep.yaml" "$tmp/f64rep"
SHARD=gradients MASTER=sharded DTYPE=float64 STEPS=4 write_config "$tmp/f64sh.yaml" "$tmp/f64sh"
for run in f64rep f64sh; do
  rc=0; train_ranks 2 --config "$tmp/$run.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "$run exited $rc: $(tail -3 "$tmp/train.log")"
done
out=$(cmp_state "$(last "$tmp/f64sh")" "$(last "$tmp/f64rep")" 1e-10) || fail "float64: $out"
checks=$((checks + 1)); echo "ok: float64, 2 ranks, shard gradients, master sharded equals replicated: $out"

# 3. Across layouts, bf16 on 2 ranks: stop under one, resume exactly under the other; the run
# ends bit for bit where one that never stopped does (shard gradients frees the other ranks'
# gradients between steps).
SHARD=gradients DTYPE=bfloat16 STEPS=5 write_config "$tmp/whole.yaml" "$tmp/whole"
rc=0; train_ranks 2 --config "$tmp/whole.yaml" || rc=$?; [ $rc -eq 0 ] || fail "whole run exited $rc"
for order in "sharded replicated" "replicated sharded"; do
  set -- $order
  d=$tmp/cut$1
  SHARD=gradients MASTER=$1 DTYPE=bfloat16 STEPS=5 write_config "$d.yaml" "$d"
  rc=0; train_ranks 2 --config "$d.yaml" --stop-after 2 || rc=$?
  [ $rc -eq 75 ] || fail "master $1: stop exited $rc: $(tail -3 "$tmp/train.log")"
  SHARD=gradients MASTER=$2 DTYPE=bfloat16 STEPS=5 write_config "$d.yaml" "$d"
  rc=0; train_ranks 2 --config "$d.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "master $1 -> $2: resume exited $rc: $(tail -3 "$tmp/train.log")"
  grep '"type":"segment_start"' "$(events_file "$d" local 0)" | tail -1 | grep -q '"mode":"exact"' ||
    fail "master $1 -> $2: resume was not exact"
  same_run "$tmp/whole" "$d" "bf16, saved with master $1, resumed with master $2"
done

# 4. Another rank count: saved sharded on 2 ranks, resumed sharded on 3 and on 1; a bf16 export,
# so each owner also writes its masters' master_weights file.
for pair in "2 3" "2 1"; do
  set -- $pair
  d=$tmp/ws$1$2
  SHARD=optimizer MASTER=sharded DTYPE=bfloat16 STEPS=5 ACCUM=1 EXPORT=bf16 write_config "$d.yaml" "$d"
  rc=0; train_ranks "$1" --config "$d.yaml" --stop-after 2 || rc=$?
  [ $rc -eq 75 ] || fail "$1-rank segment exited $rc"
  saved=$(last "$d")
  for r in 1 2; do
    [ -f "$saved/master_weights-0000$r-of-00002.safetensors" ] || fail "no master_weights file of rank $((r - 1))"
  done
  rc=0; train_ranks "$2" --config "$d.yaml" --stop-after 1 || rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 75 ] || fail "$2-rank resume exited $rc: $(tail -3 "$tmp/train.log")"
  grep -q "resharding data from $1 to $2 ranks" "$tmp/train.log" || fail "no reshard line for $1 -> $2"
  grep '"type":"segment_start"' "$(events_file "$d" local 0)" | tail -1 | grep -q '"mode":"exact"' ||
    fail "$1 -> $2: resume was not exact"
  python3 - "$saved" "$(last "$d")" <<'PY' || fail "$1 -> $2: step counts did not continue"
import json, sys
a = json.load(open(sys.argv[1] + "/trainer_state.json"))["step"]
b = json.load(open(sys.argv[2] + "/trainer_state.json"))["step"]
assert b == a + 1, (a, b)
PY
  "$bt" ckpt verify "$(last "$d")" >/dev/null || fail "$1 -> $2: the resumed run's checkpoint is invalid"
  checks=$((checks + 1)); echo "ok: master sharded, saved on $1 ranks, resumed exact on $2"
done

# 5. Bad input: a sharded master without sharded optimizer state, and an unknown layout.
SHARD=none MASTER=sharded DTYPE=bfloat16 write_config "$tmp/bad1.yaml" "$tmp/bad1"
rc=0; out=$("$bt" train --config "$tmp/bad1.yaml" 2>&1) || rc=$?
[ $rc -eq 78 ] && grep -q "optim.master: value sharded needs optim.shard optimizer or gradients" <<<"$out" ||
  fail "master sharded with shard none: exit $rc: $out"
[ ! -d "$tmp/bad1" ] || fail "a refused config left a run folder"
SHARD=optimizer MASTER=everywhere write_config "$tmp/bad2.yaml" "$tmp/bad2"
rc=0; out=$("$bt" train --config "$tmp/bad2.yaml" 2>&1) || rc=$?
[ $rc -eq 78 ] && grep -q "optim.master" <<<"$out" && grep -q "everywhere" <<<"$out" ||
  fail "master everywhere: exit $rc: $out"
checks=$((checks + 1)); echo "ok: optim.master sharded without optim.shard, and an unknown value: 78 naming the key"
# 6. A split parameter's bf16 gradient lives only until the next one arrives: a hook widens each
# into its float32 buffer during the backward, so at most one is alive at once (with and without
# checkpointing, whose nested backward runs the hooks too). The control widens them all after the
# backward, as without the hooks: every split parameter's is alive then. Both give the same bits.
alive() { sed -n 's/.*split parameters \([0-9]*\), bf16 gradients alive at once \([0-9]*\).*/\1 \2/p' <<<"$1"; }
for act in none blocks+attention; do
  tag=${act%%+*}
  SHARD=optimizer MASTER=sharded DTYPE=bfloat16 ACT=$act write_config "$tmp/os$tag.yaml" "$tmp/os$tag"
  for mode in hooks control; do
    env=(); if [ $mode = control ]; then env=(BATON_TEST_WIDEN_AFTER_BACKWARD=1); fi
    out=$(env "${env[@]}" "$bt" one-step --config "$tmp/os$tag.yaml" --count 8 --batch-size 4 \
      --repeat 2 --out "$tmp/os$tag.$mode.safetensors" 2>&1) || fail "one-step ($mode, $act): $out"
    read -r split live <<<"$(alive "$out")"
    [ -n "$live" ] || fail "one-step ($mode, $act) printed no count of alive bf16 gradients: $out"
    [ "$split" -ge 30 ] || fail "$act: only $split split parameters, too few to tell"
    if [ $mode = hooks ]; then
      [ "$live" -le 2 ] || fail "$act: $live of $split bf16 gradients alive at once with the hooks"
      hooked=$live
    else
      [ "$live" = "$split" ] || fail "$act: the control held $live of $split bf16 gradients at once"
    fi
  done
  "$bt" tensor-diff "$tmp/os$tag.hooks.safetensors" "$tmp/os$tag.control.safetensors" >/dev/null ||
    fail "$act: widening on arrival changed the step's weights or gradients"
  checks=$((checks + 1)); echo "ok: checkpointing $act: $hooked of $split bf16 gradients alive at once at most ($split in the control), the same bits"
done
# 7. An abandoned step: a stop signal in the backward of step 3's second micro-step, after the
# hooks widened part of its gradients, abandons the step (gradients zeroed); the resume is exact
# and the run ends bit for bit where the one that never stopped did.
d=$tmp/abandon
SHARD=gradients MASTER=sharded DTYPE=bfloat16 STEPS=5 write_config "$d.yaml" "$d"
: >"$tmp/train.log"
export BATON_TEST_SIGNAL_AT=backward:2:1:0
rc=0; train_ranks 2 --config "$d.yaml" || rc=$?
unset BATON_TEST_SIGNAL_AT
[ $rc -eq 75 ] || fail "a signal in the backward: exit $rc, expected 75: $(tail -3 "$tmp/train.log")"
grep -q "^abandoned step 3 .*landed in backward of step 3, micro-step 1, block 0;" "$tmp/train.log" ||
  fail "the signal did not abandon step 3 in its backward: $(grep abandoned "$tmp/train.log")"
rc=0; train_ranks 2 --config "$d.yaml" || rc=$?
[ $rc -eq 0 ] || fail "resume after the abandoned step exited $rc: $(tail -3 "$tmp/train.log")"
same_run "$tmp/whole" "$d" "bf16, master sharded, a step abandoned in its backward then resumed"
echo "$checks passed, 0 failed"
