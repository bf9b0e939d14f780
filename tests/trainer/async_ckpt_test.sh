#!/usr/bin/env bash
# Async periodic checkpoints (checkpoint.async): the files a background save writes are byte for
# byte a synchronous save's, manifest included; a run resumed from them (on 1 and 2 ranks) is
# bit for bit the uninterrupted one; SIGKILL at 20 random moments, most inside a background
# write (slowed by BATON_TEST_CKPT_WRITE_DELAY_MS), leaves only checkpoints equal to the
# uninterrupted run's and .partial folders that no resume takes; a stop signal finishes or
# abandons the write by the grace budget (BATON_GRACE_S); a write that fails fails the run with
# the file named and nothing taken; a snapshot that does not fit host memory saves synchronously.
# usage: async_ckpt_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 16 5:12
# cfg FILE RUN_DIR ASYNC [extra checkpoint keys]: a run saving every 2 steps.
cfg() {
  EVERY=2 ACCUM=1 write_config "$1" "$2"
  sed -i "s/keep_last: 3}/keep_last: 100, async: $3${4:-}}/" "$1"
}
# all_valid RUN_DIR: every folder under checkpoints/ that is not .partial verifies.
all_valid() {
  local c
  for c in "$1"/checkpoints/checkpoint_step_*; do
    case $c in *.partial | *'*') continue ;; esac
    "$bt" ckpt verify "$c" >/dev/null 2>&1 || fail "$c is not a valid checkpoint"
  done
}

# 1. The bytes of an async save are a sync save's: every file, the manifest too (nothing in a
# checkpoint folder records how or how fast it was written), on 1 and 2 ranks.
for world in 1 2; do
  for mode in true false; do
    STEPS=4 cfg "$tmp/b$world$mode.yaml" "$tmp/b$world$mode" $mode ", export_dtype: bf16"
    : >"$tmp/train.log"
    rc=0; train_ranks $world --config "$tmp/b$world$mode.yaml" || rc=$?
    [ $rc -eq 0 ] || fail "$world-rank async=$mode run exited $rc: $(tail -3 "$tmp/train.log")"
    if [ $mode = true ]; then
      grep -q "checkpoint_step_2: .*(periodic), async: training stalled" "$tmp/train.log" ||
        fail "the $world-rank periodic save was not written in the background: $(grep checkpoint "$tmp/train.log")"
    else
      ! grep -q "async:" "$tmp/train.log" || fail "checkpoint.async false still saved in the background"
    fi
  done
  for step in 2 4; do
    a=$tmp/b${world}true/checkpoints/checkpoint_step_$step
    b=$tmp/b${world}false/checkpoints/checkpoint_step_$step
    [ -f "$a/MANIFEST.json" ] || fail "$a was not committed"
    diff -r "$a" "$b" >/dev/null || fail "the $world-rank async save of step $step differs from the sync one: $(diff -rq "$a" "$b")"
  done
  n=$(find "$tmp/b${world}true/checkpoints/checkpoint_step_2" -type f | wc -l)
  checks=$((checks + 1))
  echo "ok: $world rank(s): the async save of step 2 is byte for byte the sync save ($n files, MANIFEST.json included)"
done

# 2. Exact resume with async saves, 1 and 2 ranks: from the stop save (taken while a background
# save was settled) and from the background-written checkpoint itself.
for world in 1 2; do
  STEPS=6 cfg "$tmp/ref$world.yaml" "$tmp/ref$world" true
  rc=0; train_ranks $world --config "$tmp/ref$world.yaml" || rc=$?; [ $rc -eq 0 ] || fail "reference exited $rc"
  STEPS=6 cfg "$tmp/cut$world.yaml" "$tmp/cut$world" true
  rc=0; train_ranks $world --config "$tmp/cut$world.yaml" --stop-after 3 || rc=$?
  [ $rc -eq 75 ] || fail "$world-rank stop exited $rc: $(tail -3 "$tmp/train.log")"
  cp -r "$tmp/cut$world" "$tmp/bg$world"
  sed "s#dir: $tmp/cut$world#dir: $tmp/bg$world#" "$tmp/cut$world.yaml" >"$tmp/bg$world.yaml"
  rm -rf "$tmp/bg$world/checkpoints/checkpoint_step_3"
  for run in cut bg; do
    rc=0; train_ranks $world --config "$tmp/$run$world.yaml" || rc=$?
    [ $rc -eq 0 ] || fail "$world-rank resume of $run exited $rc: $(tail -3 "$tmp/train.log")"
    same_checkpoint "$tmp/ref$world/checkpoints/checkpoint_step_6" "$tmp/$run$world/checkpoints/checkpoint_step_6"
  done
  python3 - "$(events_file "$tmp/bg$world" local 0)" <<'PY' || fail "the resume did not start from the background-written step 2"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"segment_start"' in l][-1]
assert s["mode"] == "exact" and s["step0"] == 2, s
PY
  checks=$((checks + 1)); echo "ok: $world rank(s): resumed bit for bit from the stop save and from the async save of step 2"
done

# 3. SIGKILL at 20 random moments of a run whose background writes are slowed down (40 ms after
# each file: a save spans several steps). After every
# kill: each committed checkpoint verifies and holds the uninterrupted run's tensors of its step;
# the next segment starts from the newest committed one, never a .partial; the run finally ends
# where the uninterrupted one does.
STEPS=60 cfg "$tmp/kref.yaml" "$tmp/kref" true
rc=0; train_ranks 1 --config "$tmp/kref.yaml" || rc=$?; [ $rc -eq 0 ] || fail "kill reference exited $rc"
STEPS=60 cfg "$tmp/kill.yaml" "$tmp/kill" true
ev=$(events_file "$tmp/kill" local 0)
steps_done() { local n; n=$(grep -c '"type":"step"' "$ev" 2>/dev/null || true); echo "${n:-0}"; }
RANDOM=4242
inside=0
declare -A seen=()
for i in $(seq 20); do
  before=$(steps_done)
  rm -rf "$tmp/kill/checkpoints/"*.partial  # as the next save would: what is left is this segment's
  BATON_TEST_CKPT_WRITE_DELAY_MS=40 "$bt" train --config "$tmp/kill.yaml" >>"$tmp/kill.log" 2>&1 &
  pid=$!
  # Kill after a random 1-6 steps of this segment and a random 0-0.3 s more: the moment
  # depends on the run's progress, not on how fast this machine starts libtorch.
  k=$((1 + RANDOM % 6))
  for _ in $(seq 1500); do
    [ "$(steps_done)" -ge $((before + k)) ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  sleep "$(printf '0.%03d' $((RANDOM % 300)))"
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  if ls -d "$tmp/kill/checkpoints/"*.partial >/dev/null 2>&1; then inside=$((inside + 1)); fi
  for c in "$tmp/kill"/checkpoints/checkpoint_step_*; do
    case $c in *.partial | *'*') continue ;; esac
    name=$(basename "$c")
    # Newly committed: it verifies, and holds the uninterrupted run's tensors byte for byte.
    if [ -z "${seen[$name]:-}" ]; then
      "$bt" ckpt verify "$c" >/dev/null 2>&1 || fail "$c is not a valid checkpoint"
      seen[$name]=1
    fi
    for f in $(cd "$c" && find . -name '*.safetensors'); do
      cmp -s "$c/$f" "$tmp/kref/checkpoints/$name/$f" || fail "$name/$f differs from the uninterrupted run's"
    done
  done
done
[ $inside -ge 10 ] || fail "only $inside of 20 kills landed inside a save (slow the writes down further)"
rc=0; "$bt" train --config "$tmp/kill.yaml" >>"$tmp/kill.log" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "the final resume exited $rc: $(tail -3 "$tmp/kill.log")"
python3 - "$ev" <<'PY' || fail "a segment started from a .partial folder"
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "segment_start" and r.get("checkpoint"):
        assert not r["checkpoint"].endswith(".partial"), r
PY
same_checkpoint "$tmp/kref/checkpoints/checkpoint_step_60" "$tmp/kill/checkpoints/checkpoint_step_60"
checks=$((checks + 1)); echo "ok: 20 SIGKILLs ($inside inside a save; ${#seen[@]} checkpoints committed): each exact, no .partial taken, the end bit-identical"

# 4. A stop signal during a background save: finished when no grace budget is given (or it
# fits), abandoned when the rest of it would not fit; the stop save is written either way.
STEPS=20 cfg "$tmp/s1.yaml" "$tmp/s1" true
rc=0; BATON_TEST_CKPT_WRITE_DELAY_MS=300 "$bt" train --config "$tmp/s1.yaml" --stop-after 3 >"$tmp/s1.log" 2>&1 || rc=$?
[ $rc -eq 75 ] || fail "stop exited $rc: $(tail -3 "$tmp/s1.log")"
grep -q "finishing the background save of step 2 before the stop save: no grace budget" "$tmp/s1.log" ||
  fail "the background save was not finished: $(cat "$tmp/s1.log")"
all_valid "$tmp/s1"
[ -f "$tmp/s1/checkpoints/checkpoint_step_2/MANIFEST.json" ] && [ -f "$tmp/s1/checkpoints/checkpoint_step_3/MANIFEST.json" ] ||
  fail "finishing should leave steps 2 and 3: $(ls "$tmp/s1/checkpoints")"
checks=$((checks + 1)); echo "ok: a stop without a grace budget finishes the background save, then saves"
STEPS=20 cfg "$tmp/s2.yaml" "$tmp/s2" true
rc=0; BATON_GRACE_S=0 BATON_TEST_CKPT_WRITE_DELAY_MS=300 "$bt" train --config "$tmp/s2.yaml" --stop-after 3 >"$tmp/s2.log" 2>&1 || rc=$?
[ $rc -eq 75 ] || fail "stop exited $rc: $(tail -3 "$tmp/s2.log")"
grep -Eq "abandoned the background save of step 2 on the stop request: .*(exceed the 0 s grace budget|no rate)" "$tmp/s2.log" ||
  fail "the background save was not abandoned: $(cat "$tmp/s2.log")"
[ "$(ls "$tmp/s2/checkpoints")" = checkpoint_step_3 ] || fail "abandoning should leave only step 3: $(ls "$tmp/s2/checkpoints")"
all_valid "$tmp/s2"
checks=$((checks + 1)); echo "ok: a stop whose grace budget the write would exceed abandons it (.partial removed), then saves"
expect_exit 78 env BATON_GRACE_S=soon "$bt" train --config "$tmp/s2.yaml"
expect_in "$err" "BATON_GRACE_S='soon' is not decimal seconds in [0, 86400]"

# 5. The checkpoint folder failing under a background write: the run stops with exit 74 naming
# the file, and the half-written folder is never taken.
STEPS=20 cfg "$tmp/w.yaml" "$tmp/w" true
BATON_TEST_CKPT_WRITE_DELAY_MS=400 "$bt" train --config "$tmp/w.yaml" >"$tmp/w.log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -d "$tmp/w/checkpoints/checkpoint_step_2.partial/transformer" ] && break; sleep 0.02; done
rm -rf "$tmp/w/checkpoints/checkpoint_step_2.partial/transformer"
touch "$tmp/w/checkpoints/checkpoint_step_2.partial/transformer"
rc=0; wait $pid || rc=$?
[ $rc -eq 74 ] || fail "a failed background write exited $rc, expected 74: $(tail -5 "$tmp/w.log")"
grep -q "checkpoint_step_2.partial/transformer/diffusion_pytorch_model.safetensors: cannot create" "$tmp/w.log" ||
  fail "the error does not name the file: $(tail -5 "$tmp/w.log")"
[ ! -e "$tmp/w/checkpoints/checkpoint_step_2" ] || fail "a failed background save was committed"
checks=$((checks + 1)); echo "ok: a background write that fails: exit 74 naming the file, nothing committed"

# 6. A snapshot that does not fit the host memory the run states saves synchronously, saying why.
STEPS=4 cfg "$tmp/m.yaml" "$tmp/m" true
echo "slurm: {mem_per_task_gb: 0.001}" >>"$tmp/m.yaml"
expect_exit 0 "$bt" train --config "$tmp/m.yaml"
expect_in "$out" "checkpoint.async: periodic saves are synchronous: the snapshot"
expect_in "$out" "would pass slurm.mem_per_task_gb"
! grep -q "async: training stalled" <<<"$out" || fail "the refused snapshot was still taken"
expect_exit 0 "$bt" ckpt verify "$tmp/m/checkpoints/checkpoint_step_2"
echo "$checks passed, 0 failed"
