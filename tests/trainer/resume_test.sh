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
  ev=$(events_file "$tmp/cut$world" local 0)
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
  grep -c '"mode":"exact"' "$(events_file "$tmp/cut$world" local 0)" | grep -q '^[45]$' ||
    fail "every resume was exact"
  ! grep -q '"resume_warmup_steps":[1-9]' "$(events_file "$tmp/cut$world" local 0)" || fail "no re-warmup on exact resume"
  checks=$((checks + 1)); echo "ok: every resume exact, no re-warmup"
done
# A change of world size keeps the data position: 2 ranks stop mid-epoch, 1 rank resumes; every
# episode of that epoch is trained exactly once (24 episodes = 3 batches per rank per epoch).
STEPS=10 ACCUM=1 write_config "$tmp/ws.yaml" "$tmp/ws"
export BATON_EPISODE_LOG=$tmp/episodes
rc=0; train_ranks 2 --config "$tmp/ws.yaml" --stop-after 4 || rc=$?
[ $rc -eq 75 ] || fail "2-rank segment exited $rc"
rc=0; train_ranks 1 --config "$tmp/ws.yaml" || rc=$?
[ $rc -eq 0 ] || fail "1-rank resume exited $rc: $(tail -3 "$tmp/train.log")"
unset BATON_EPISODE_LOG
grep -q "resharding data from 2 to 1 ranks at epoch 1, batch 1" "$tmp/train.log" || fail "no reshard line"
python3 - "$tmp/episodes" <<'PY'
import collections, sys
base = sys.argv[1]
def rows(rank):
    return [list(map(int, l.split())) for l in open(f"{base}.{rank}")]
# Under 2 ranks epoch 1 is steps 3..5; the stop came after step 3 (4 steps done). The 1-rank
# segment then trains the 4 batches left of epoch 1 at steps 4..7.
epoch1 = [r[1:] for rank in (0, 1) for r in rows(rank) if r[0] == 3]
epoch1 += [r[1:] for r in rows(0) if 4 <= r[0] <= 7 and len(r) > 1][-4:]
count = collections.Counter(e for b in epoch1 for e in b)
assert len(epoch1) == 6, epoch1
assert sorted(count) == list(range(24)) and set(count.values()) == {1}, count
PY
checks=$((checks + 1)); echo "ok: 2 -> 1 ranks mid-epoch: every episode of the epoch trained exactly once"
echo "$checks passed, 0 failed"
