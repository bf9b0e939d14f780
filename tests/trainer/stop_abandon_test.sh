#!/usr/bin/env bash
# A stop signal abandons the step in flight at the next block boundary and checkpoints the state
# of that step's start; only a signal during the update waits for it. Real SIGUSR1s land at
# random boundaries (BATON_TEST_SIGNAL_AT: in forward, in backward, between micro-steps, during
# the update, during a periodic save; at the first step of a segment) and at random moments of
# slowed steps (BATON_TEST_BLOCK_SLEEP_MS), on 1 rank and on 2 (signalled both, and only one),
# and every segment is resumed: the final weights, AdamW state and export, and the per-step logs,
# are bit-for-bit those of an uninterrupted run. Each signal's landing is read back from the
# trainer's "abandoned step" line, so every phase is known to have been hit.
# usage: stop_abandon_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 24 5:12
STEPS=16 LAYERS=3 ACCUM=3 EVERY=4

# cfg FILE RUN_DIR: 3 blocks, 3 micro-steps per step, a periodic checkpoint every 4 steps, written
# synchronously (so "during a periodic save" is a save on the training thread; a stop during a
# background save is tests/trainer/async_ckpt_test.sh's).
cfg() {
  cat >"$1" <<YAML
run: {name: t, dir: $2, steps: $STEPS, seed: 11}
data: {path: $tmp/ds, batch_size: 4, pad_multiple: 4, pool_factor: 2}
model: {dim: 24, heads: 2, layers: $LAYERS, ffn_dim: 48, freq_dim: 16}
optim: {lr: 2.0e-3, warmup_steps: 3, grad_accum: $ACCUM, shard: $SHARD}
checkpoint: {every: $EVERY, keep_last: 50, async: false}
train: {dtype: float32, log_every: 100}
YAML
}

# newest RUN_DIR: the step of the newest checkpoint (0 when none).
newest() {
  local n
  n=$(ls "$1/checkpoints" 2>/dev/null | sed -n 's/^checkpoint_step_\([0-9]*\)$/\1/p' | sort -n | tail -1 || true)
  echo "${n:-0}"
}

# segment WORLD SPEC LANDED CKPT: one segment with a SIGUSR1 at SPEC; it must exit 75, a rank
# must report LANDED, and the newest checkpoint must then be CKPT.
segment() {
  local world=$1 spec=$2 landed=$3 ck=$4 rc=0
  : >"$tmp/train.log"
  export BATON_TEST_SIGNAL_AT=$spec
  train_ranks "$world" --config "$cfgf" || rc=$?
  unset BATON_TEST_SIGNAL_AT
  [ $rc -eq 75 ] || fail "$spec on $world rank(s): exit $rc, expected 75: $(tail -5 "$tmp/train.log")"
  grep -q "landed in $landed;" "$tmp/train.log" ||
    fail "$spec: no rank reports 'landed in $landed': $(grep abandoned "$tmp/train.log")"
  [ "$(newest "$run")" -eq "$ck" ] || fail "$spec: newest checkpoint $(newest "$run"), expected $ck"
  [ "$(grep -c '^abandoned step' "$tmp/train.log")" -eq "$world" ] || fail "$spec: not every rank abandoned"
  cat "$tmp/train.log" >>"$tmp/all.log"
  checks=$((checks + 1))
  echo "ok: $world rank(s), $spec: landed in $landed, checkpoint $ck"
}

# external WORLD: a real pkill -USR1 at a random moment of a slowed step (every block sleeps).
# Whatever boundary it lands after, each rank must leave at the very next one.
external() {
  local world=$1 rc=0 ev n0
  ev=$(events_file "$run" local 0)
  : >"$tmp/train.log"
  n0=$(grep -c '"type":"step"' "$ev" 2>/dev/null || true)
  (
    for _ in $(seq 1200); do
      [ "$(grep -c '"type":"step"' "$ev" 2>/dev/null || true)" -gt "${n0:-0}" ] && break
      sleep 0.05
    done
    sleep "0.$((RANDOM % 10))"
    pkill -USR1 -f "baton-train train --config $cfgf" || true
  ) &
  local watcher=$!
  BATON_TEST_BLOCK_SLEEP_MS=25 train_ranks "$world" --config "$cfgf" || rc=$?
  wait $watcher
  [ $rc -eq 75 ] || fail "external USR1 on $world rank(s): exit $rc: $(tail -5 "$tmp/train.log")"
  python3 - "$tmp/train.log" "$LAYERS" "$ACCUM" <<'PY' || fail "external USR1 on $world rank(s): $(grep abandoned "$tmp/train.log")"
import re, sys
log, L, A = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
lines = re.findall(r"^abandoned step (\d+) \(rank (\d+)\): USR1 landed in (.*); left (.*), ([\d.]+) s after", log, re.M)
assert lines, "no rank reports where the signal landed"
pos = r"(forward|backward) of step (\d+), micro-step (\d+), (?:block (\d+)|past block 0)"
for step, rank, landed, left, _ in lines:
    a, b = re.fullmatch(pos, landed), re.fullmatch(pos, left)
    if not a:  # between micro-steps, the update, between steps: left at the next boundary too
        print(f"rank {rank}: landed in {landed}, left {left}")
        continue
    ph, st, m = a.group(1), int(a.group(2)), int(a.group(3))
    blk = int(a.group(4)) if a.group(4) is not None else -1
    if ph == "forward":
        nxt = ("forward", st, m, blk + 1) if blk < L else ("backward", st, m, L - 1)
    elif blk >= 0:
        nxt = ("backward", st, m, blk - 1)
    else:
        nxt = None  # past block 0: next micro-step or the vote
    if nxt is None:
        ok = left.startswith(f"between micro-steps of step {st}, before micro-step {m + 1}") or (
            m == A - 1 and left.startswith("at the vote"))
    else:
        nb = b and (b.group(1), int(b.group(2)), int(b.group(3)),
                    int(b.group(4)) if b.group(4) is not None else -1)
        ok = nb == nxt
    assert ok, f"rank {rank}: landed in {landed} but left {left}: not the next boundary"
    assert int(step) == st, (step, st)
    print(f"rank {rank}: landed in {landed}, left at the next boundary ({left})")
PY
  local ab
  ab=$(sed -n 's/^abandoned step \([0-9]*\) .*/\1/p' "$tmp/train.log" | head -1)
  [ "$(newest "$run")" -eq $((ab - 1)) ] || fail "external: abandoned step $ab, newest checkpoint $(newest "$run")"
  cat "$tmp/train.log" >>"$tmp/all.log"
  checks=$((checks + 1))
  echo "ok: $world rank(s), external USR1: abandoned step $ab, checkpoint $((ab - 1))"
}

for world in 1 2; do
  # 2 ranks also shard the optimizer state (each rank writes its part of every save).
  SHARD=$([ "$world" -eq 2 ] && echo optimizer || echo none)
  run=$tmp/full$world cfgf=$tmp/full$world.yaml
  cfg "$cfgf" "$run"
  rc=0; train_ranks "$world" --config "$cfgf" || rc=$?
  [ $rc -eq 0 ] || fail "uninterrupted run on $world rank(s) exited $rc"

  run=$tmp/cut$world cfgf=$tmp/cut$world.yaml
  cfg "$cfgf" "$run"
  : >"$tmp/all.log"
  # The first step of a fresh segment: nothing to save, nothing lost.
  segment "$world" "forward:0:0:1" "forward of step 1, micro-step 0, block 1" 0
  grep -q "stopping at the start of step 1 on a stop request (USR1): nothing new to save" "$tmp/train.log" ||
    fail "abandoning the first step should save nothing"
  # Random boundaries inside a step that follows the segment's first (s is 0-based, c = newest).
  c=$(newest "$run"); s=$((c + 1 + RANDOM % 2)); m=$((RANDOM % ACCUM)); b=$((RANDOM % LAYERS))
  segment "$world" "forward:$s:$m:$b" "forward of step $((s + 1)), micro-step $m, block $b" $s
  c=$(newest "$run"); s=$((c + 1 + RANDOM % 2)); m=$((RANDOM % ACCUM)); b=$((RANDOM % LAYERS))
  segment "$world" "backward:$s:$m:$b" "backward of step $((s + 1)), micro-step $m, block $b" $s
  c=$(newest "$run"); s=$((c + 1)); m=$((1 + RANDOM % (ACCUM - 1)))
  segment "$world" "micro:$s:$m" "between micro-steps of step $((s + 1)), before micro-step $m" $s
  # During the update: the step completes, the next is abandoned at its start, its state saved.
  c=$(newest "$run"); s=$((c + RANDOM % 2))
  segment "$world" "update:$s" "the update of step $((s + 1))" $((s + 1))
  grep -q "left at the start of step $((s + 2)), before reading its data" "$tmp/train.log" ||
    fail "a signal in the update should end the next step before it reads data"
  # During a periodic save (after step s, s + 1 a multiple of EVERY): no second save, no new step.
  c=$(newest "$run"); s=$(((c / EVERY + 1) * EVERY - 1))
  segment "$world" "save:$s" "save after step $((s + 1))" $((s + 1))
  grep -q "nothing new to save" "$tmp/train.log" || fail "a signal in a periodic save saved again"
  if [ "$world" -eq 2 ]; then
    # Only one rank signalled, in a block: the other finishes its micro-steps, they meet at the
    # vote and both abandon (no deadlock, the same checkpoint).
    c=$(newest "$run"); s=$((c + 1)); m=$((RANDOM % ACCUM)); b=$((RANDOM % LAYERS))
    segment 2 "backward:$s:$m:$b@1" "backward of step $((s + 1)), micro-step $m, block $b" $s
    grep -q "^abandoned step $((s + 1)) (rank 0): on the stop request (USR1) of rank 1" "$tmp/train.log" ||
      fail "rank 0 did not abandon on rank 1's signal"
    grep '"type":"segment_end"' "$(events_file "$run" local 0)" | tail -1 | grep -q '"signal":"USR1"' ||
      fail "rank 0's segment_end does not name rank 1's signal"
    c=$(newest "$run"); s=$((c + 1)); m=$((RANDOM % ACCUM)); b=$((RANDOM % LAYERS))
    segment 2 "forward:$s:$m:$b@0" "forward of step $((s + 1)), micro-step $m, block $b" $s
  fi
  external "$world"
  rc=0; : >"$tmp/train.log"; train_ranks "$world" --config "$cfgf" || rc=$?
  [ $rc -eq 0 ] || fail "final segment on $world rank(s) exited $rc: $(tail -5 "$tmp/train.log")"

  same_checkpoint "$tmp/full$world/checkpoints/checkpoint_step_$STEPS" "$run/checkpoints/checkpoint_step_$STEPS"
  diff <(effective_steps "$tmp/full$world") <(effective_steps "$run") >/dev/null ||
    fail "per-step loss/LR logs differ on $world rank(s)"
  [ "$(effective_steps "$run" | wc -l)" -eq "$STEPS" ] || fail "expected $STEPS logged steps"
  ! grep -q '"resume_warmup_steps":[1-9]' "$(events_file "$run" local 0)" || fail "a resume re-warmed up"
  checks=$((checks + 1)); echo "ok: $world rank(s): per-step lr, loss and grad norm identical"
done
echo "$checks passed, 0 failed"
