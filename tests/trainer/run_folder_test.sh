#!/usr/bin/env bash
# The run folder deleted or replaced under a live run (docs/bad_input.md, "Checkpoints"): the
# trainer stops at the next step boundary with a named error (65) on every rank, and recreates
# nothing — no checkpoints/ in a folder nobody looks at, no training on into an unlinked events
# file. usage: run_folder_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 8 3:5
# Each trainer bounded in time: one that trains on after the change would run for minutes.
printf '#!/bin/sh\nexec timeout 120 "%s" "$@"\n' "$bt" >"$tmp/bt_bounded"
chmod +x "$tmp/bt_bounded"

# run_and_change WORLD RUN_DIR CHANGE: starts a run that would take minutes, applies CHANGE
# (a shell command) once a step is logged, and leaves the exit code in $rc.
run_and_change() {
  local world=$1 dir=$2 change=$3
  # The first save comes long after the change (a check before a save cannot see a change made
  # during it); the old trainer trained on for minutes and recreated checkpoints/ at it.
  STEPS=20000 EVERY=400 ACCUM=1 write_config "$tmp/run.yaml" "$dir"
  : >"$tmp/train.log"
  (bt=$tmp/bt_bounded train_ranks "$world" --config "$tmp/run.yaml") &
  local pid=$! ev
  ev=$(events_file "$dir" local 0)
  for _ in $(seq 1200); do
    grep -qs '"type":"step"' "$ev" && break
    sleep 0.05
  done
  grep -qs '"type":"step"' "$ev" || fail "no step logged: $(tail -5 "$tmp/train.log")"
  eval "$change"
  rc=0; wait "$pid" || rc=$?
}

# 1. Deleted (1 rank).
run_and_change 1 "$tmp/r1" 'rm -rf "$tmp/r1"'
[ "$rc" -eq 65 ] || fail "a deleted run folder: exit $rc, expected 65: $(tail -5 "$tmp/train.log")"
grep -q "the run folder $tmp/r1 is gone" "$tmp/train.log" || fail "no named error: $(tail -5 "$tmp/train.log")"
[ ! -e "$tmp/r1" ] || fail "the trainer recreated $(find "$tmp/r1")"
checks=$((checks + 1)); echo "ok: a deleted run folder stops the run with 65 and is not recreated"

# 2. Replaced by another folder of that name (2 ranks: both stop with the same code).
run_and_change 2 "$tmp/r2" 'mv "$tmp/r2" "$tmp/r2.moved" && mkdir "$tmp/r2"'
[ "$rc" -eq 65 ] || fail "a replaced run folder: exit $rc, expected 65: $(tail -5 "$tmp/train.log")"
grep -q "the run folder $tmp/r2 was replaced" "$tmp/train.log" || fail "no named error: $(tail -5 "$tmp/train.log")"
[ -z "$(ls -A "$tmp/r2")" ] || fail "the trainer wrote into the new folder: $(find "$tmp/r2")"
grep -q '"reason":"error"' "$(events_file "$tmp/r2.moved" local 0)" ||
  fail "the moved folder's events file lacks the error"
checks=$((checks + 1)); echo "ok: a replaced run folder stops both ranks with 65; the new one stays empty"

echo "run_folder_test: $checks checks passed"
