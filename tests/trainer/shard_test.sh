#!/usr/bin/env bash
# Sharded optimizer state (optim.shard): a sharded run equals the replicated run (float64, 1-3
# ranks, ≤ 1e-10), is deterministic in float32, resumes bit for bit on the same rank count and
# with the data position kept on another (2 -> 3, 3 -> 2, 2 -> 1); its checkpoints are per-rank
# files plus an index that `ckpt verify` checks whole, and a rank killed mid-save leaves no
# checkpoint behind. usage: shard_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
PY=${BATON_PYTHON:-/usr/bin/python3}
cmp_state() { "$PY" "$(dirname "$0")/ckpt_state.py" "$@"; }
make_dataset "$tmp/ds" 24 5:12
last() { ls -d "$1"/checkpoints/checkpoint_step_* | sort -t_ -k3 -n | tail -1; }

# 1. float64: sharded == replicated on the same ranks, for both shard modes.
for world in 1 2 3; do
  DTYPE=float64 STEPS=4 write_config "$tmp/rep$world.yaml" "$tmp/rep$world"
  rc=0; train_ranks "$world" --config "$tmp/rep$world.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "replicated run on $world rank(s) exited $rc"
  for mode in optimizer gradients; do
    SHARD=$mode DTYPE=float64 STEPS=4 write_config "$tmp/sh$world$mode.yaml" "$tmp/sh$world$mode"
    rc=0; train_ranks "$world" --config "$tmp/sh$world$mode.yaml" || rc=$?
    [ $rc -eq 0 ] || fail "optim.shard $mode on $world rank(s) exited $rc: $(tail -3 "$tmp/train.log")"
    out=$(cmp_state "$tmp/sh$world$mode/checkpoints/checkpoint_step_4" "$tmp/rep$world/checkpoints/checkpoint_step_4" 1e-10) ||
      fail "shard $mode on $world rank(s) vs replicated: $out"
    checks=$((checks + 1)); echo "ok: float64, $world rank(s), shard $mode equals replicated: $out"
  done
done
n=$(ls "$tmp/sh3optimizer/checkpoints/checkpoint_step_4" | grep -c '^optimizer-0000[123]-of-00003.safetensors$')
[ "$n" -eq 3 ] || fail "a 3-rank sharded checkpoint has $n optimizer files, expected 3"
[ -f "$tmp/sh3optimizer/checkpoints/checkpoint_step_4/optimizer.safetensors.index.json" ] || fail "no optimizer index"
[ ! -f "$tmp/sh3optimizer/checkpoints/checkpoint_step_4/optimizer.safetensors" ] || fail "sharded run wrote optimizer.safetensors"
checks=$((checks + 1)); echo "ok: 3 ranks wrote 3 optimizer files and an index"

# 2. float32: a sharded run is deterministic, and an exact resume on the same ranks bit for bit.
for tag in a b; do
  SHARD=gradients STEPS=6 write_config "$tmp/det$tag.yaml" "$tmp/det$tag"
done
rc=0; train_ranks 2 --config "$tmp/deta.yaml" || rc=$?; [ $rc -eq 0 ] || fail "float32 sharded run exited $rc"
rc=0; train_ranks 2 --config "$tmp/detb.yaml" --stop-after 2 || rc=$?; [ $rc -eq 75 ] || fail "stop exited $rc"
rc=0; train_ranks 2 --config "$tmp/detb.yaml" --stop-after 1 || rc=$?; [ $rc -eq 75 ] || fail "stop exited $rc"
rc=0; train_ranks 2 --config "$tmp/detb.yaml" || rc=$?; [ $rc -eq 0 ] || fail "resume exited $rc"
out=$(cmp_state "$tmp/deta/checkpoints/checkpoint_step_6" "$tmp/detb/checkpoints/checkpoint_step_6" 0) ||
  fail "float32 sharded: interrupted run differs from uninterrupted: $out"
diff <(effective_steps "$tmp/deta") <(effective_steps "$tmp/detb") >/dev/null || fail "step logs differ"
checks=$((checks + 1)); echo "ok: float32 sharded run stopped twice ends bit-identical (weights, AdamW, step log)"

# 3. Another rank count: the logical state carries over whole and the data position is kept.
for pair in "2 3" "3 2" "2 1"; do
  set -- $pair
  d=$tmp/ws$1$2
  SHARD=optimizer STEPS=6 ACCUM=1 write_config "$d.yaml" "$d"
  rc=0; train_ranks "$1" --config "$d.yaml" --stop-after 2 || rc=$?
  [ $rc -eq 75 ] || fail "$1-rank segment exited $rc"
  saved=$(last "$d")
  rc=0; train_ranks "$2" --config "$d.yaml" --stop-after 1 || rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 75 ] || fail "$2-rank resume exited $rc: $(tail -3 "$tmp/train.log")"
  grep -q "resharding data from $1 to $2 ranks" "$tmp/train.log" || fail "no reshard line for $1 -> $2"
  grep '"type":"segment_start"' "$(events_file "$d" local 0)" | tail -1 | grep -q '"mode":"exact"' ||
    fail "$1 -> $2: resume was not exact"
  # The resumed segment saved on stop: its step count and moments continue the saved ones.
  python3 - "$saved" "$(last "$d")" <<'PY' || fail "$1 -> $2: step counts did not continue"
import json, sys
a = json.load(open(sys.argv[1] + "/trainer_state.json"))["step"]
b = json.load(open(sys.argv[2] + "/trainer_state.json"))["step"]
assert b == a + 1, (a, b)
PY
  checks=$((checks + 1)); echo "ok: saved on $1 ranks, resumed exact on $2 with the data position kept"
done

# 4. ckpt verify and faults on the multi-file checkpoint.
good=$tmp/sh3optimizer/checkpoints/checkpoint_step_4
"$bt" ckpt verify "$good" >/dev/null || fail "ckpt verify rejects a good sharded checkpoint"
bad=$tmp/badshard/checkpoint_step_4; mkdir -p "$tmp/badshard"; cp -r "$good" "$bad"
printf 'x' | dd of="$bad/optimizer-00002-of-00003.safetensors" bs=1 seek=100 conv=notrunc 2>/dev/null
rc=0; out=$("$bt" ckpt verify "$bad" 2>&1) || rc=$?
[ $rc -eq 65 ] && grep -q "optimizer-00002-of-00003.safetensors" <<<"$out" || fail "corrupt shard: exit $rc: $out"
rm -rf "$bad"; cp -r "$good" "$bad"; rm "$bad/optimizer-00003-of-00003.safetensors"
rc=0; out=$("$bt" ckpt verify "$bad" 2>&1) || rc=$?
[ $rc -eq 65 ] && grep -q "optimizer-00003-of-00003.safetensors" <<<"$out" || fail "missing shard: exit $rc: $out"
checks=$((checks + 1)); echo "ok: ckpt verify names a corrupt or missing optimizer shard (exit 65)"

# Rank 1 dies while writing its part of the step-2 save: no checkpoint_step_2, the run resumes
# from step 1's.
SHARD=optimizer STEPS=3 EVERY=1 write_config "$tmp/kill.yaml" "$tmp/kill"
store=$tmp/rdzv.kill; pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 BATON_RDZV_FILE=$store "$bt" train --config "$tmp/kill.yaml" --fault mid_file \
    --fault-at-step 2 --fault-rank 1 >>"$tmp/train.log" 2>&1 &
  pids+=($!)
done
rc1=0; wait "${pids[1]}" || rc1=$?
rc0=0; wait "${pids[0]}" || rc0=$?
[ $rc1 -eq 137 ] || fail "rank 1 should have died by SIGKILL, exit $rc1"
[ $rc0 -ne 0 ] || fail "rank 0 finished the save although rank 1 died in it"
[ -d "$tmp/kill/checkpoints/checkpoint_step_1" ] || fail "no step-1 checkpoint"
[ ! -d "$tmp/kill/checkpoints/checkpoint_step_2" ] || fail "a rank died mid-save, yet checkpoint_step_2 exists"
"$bt" ckpt verify "$tmp/kill/checkpoints/checkpoint_step_1" >/dev/null || fail "step-1 checkpoint invalid"
rc=0; train_ranks 2 --config "$tmp/kill.yaml" || rc=$?
[ $rc -eq 0 ] || fail "resume after the killed save exited $rc"
grep '"type":"segment_start"' "$(events_file "$tmp/kill" local 0)" | tail -1 | grep -q '"step0":1' ||
  fail "the resume did not start from step 1"
ls -d "$tmp/kill/checkpoints/"*.partial 2>/dev/null && fail "a .partial folder survived the next save"
checks=$((checks + 1)); echo "ok: a rank killed mid-save leaves no checkpoint; the run resumes from the previous one"
echo "$checks passed, 0 failed"
