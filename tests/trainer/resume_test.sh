#!/usr/bin/env bash
# Exact resume: a run stopped at random steps (twice in one epoch, right at an epoch boundary, by
# a real SIGUSR1 and by --stop-after) and resumed each time ends bit-for-bit where an
# uninterrupted run does — weights, AdamW state, and the per-step loss and LR logs — on 1 and on
# 2 ranks. usage: resume_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
# 24 episodes, batch 4, accum 2: 6 batches per epoch on 1 rank = 3 steps per epoch.
make_dataset "$tmp/ds" 24 5:12

for world in 1 2; do
  STEPS=9 write_config "$tmp/full$world.yaml" "$tmp/full$world"
  rc=0; train_ranks "$world" --config "$tmp/full$world.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "uninterrupted run on $world rank(s) exited $rc"

  STEPS=9 write_config "$tmp/cut$world.yaml" "$tmp/cut$world"
  # Stops after steps 1 and 2 (twice in epoch 0), 3 (epoch boundary on 1 rank), then a random one.
  r=$((4 + RANDOM % 2))
  done_steps=0
  for target in 1 2 3 $r; do
    rc=0; train_ranks "$world" --config "$tmp/cut$world.yaml" --stop-after $((target - done_steps)) || rc=$?
    [ $rc -eq 75 ] || fail "stop at $target on $world rank(s) exited $rc, expected 75"
    [ -d "$tmp/cut$world/checkpoints/checkpoint_step_$target" ] || fail "no checkpoint at $target"
    done_steps=$target
  done
  checks=$((checks + 1)); echo "ok: $world rank(s) stopped at 1, 2, 3, $r with exit 75 and a checkpoint each"

  # One more stop by a real signal, sent once the new segment has started (its handlers are
  # installed before it writes segment_start), so it lands whatever the machine's speed.
  ev=$tmp/cut$world/events/local.0.jsonl
  segments=$(grep -c '"type":"segment_start"' "$ev")
  (
    for _ in $(seq 600); do
      [ "$(grep -c '"type":"segment_start"' "$ev")" -gt "$segments" ] && break
      sleep 0.05
    done
    pkill -USR1 -f "baton-train train --config $tmp/cut$world.yaml" || true
  ) &
  watcher=$!
  rc=0; train_ranks "$world" --config "$tmp/cut$world.yaml" || rc=$?
  wait $watcher
  [ $rc -eq 75 ] || fail "SIGUSR1 on $world rank(s): exit $rc, expected 75"
  grep -q '"reason":"signal","signal":"USR1"' "$ev" || fail "no segment_end naming USR1"
  checks=$((checks + 1)); echo "ok: SIGUSR1 stopped $world rank(s) with exit 75 after a checkpoint"
  rc=0; train_ranks "$world" --config "$tmp/cut$world.yaml" || rc=$?
  [ $rc -eq 0 ] || fail "final segment on $world rank(s) exited $rc"

  same_checkpoint "$tmp/full$world/checkpoints/checkpoint_step_9" "$tmp/cut$world/checkpoints/checkpoint_step_9"
  diff <(effective_steps "$tmp/full$world") <(effective_steps "$tmp/cut$world") >/dev/null ||
    fail "per-step loss/LR logs differ on $world rank(s)"
  [ "$(effective_steps "$tmp/cut$world" | wc -l)" -eq 9 ] || fail "expected 9 logged steps"
  checks=$((checks + 1)); echo "ok: per-step lr, loss and grad norm identical on $world rank(s)"
  grep -c '"mode":"exact"' "$tmp/cut$world/events/local.0.jsonl" | grep -q '^[45]$' ||
    fail "every resume was exact"
  ! grep -q '"resume_warmup_steps":[1-9]' "$tmp/cut$world/events/local.0.jsonl" || fail "no re-warmup on exact resume"
  checks=$((checks + 1)); echo "ok: every resume exact, no re-warmup"
done
echo "$checks passed, 0 failed"
