#!/usr/bin/env bash
# The trainer's heartbeat (docs/orchestrator.md, "Hangs"): every rank keeps one fixed-size record
# in RUN_DIR/heartbeat/rank-NNNNN, rewritten in place with its PID, phase and step; a heartbeat
# that cannot be written makes the rank warn once and train on.
# usage: heartbeat_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 8 3:5
checks=0

# Two ranks: one file each, 256 bytes, naming the rank, a live-looking PID and the final phase.
STEPS=6 EVERY=3 write_config "$tmp/a.yaml" "$tmp/a"
train_ranks 2 --config "$tmp/a.yaml" || fail "the 2-rank run failed: $(tail -5 "$tmp/train.log")"
for r in 0 1; do
  f="$tmp/a/heartbeat/rank-0000$r"
  [ -f "$f" ] || fail "no $f"
  [ "$(stat -c %s "$f")" -eq 256 ] || fail "$f is $(stat -c %s "$f") bytes, not 256"
  rec=$(cat "$f")
  expect_in "$rec" "baton-heartbeat 1 rank=$r pid="
  # The last beat is the final save (step 6 done), with its own budget of at least 60 s.
  expect_in "$rec" "phase=save step=6 "
  case "$rec" in *" budget_s=60.000 "*|*" budget_s="[1-9][0-9][0-9]*) ;; *) fail "save budget: $rec" ;; esac
  case "$rec" in *" step_s=0.000000 "*) fail "no step time in $rec" ;; esac
  checks=$((checks + 1))
done
ls "$tmp/a/heartbeat" | tr '\n' ' ' | grep -qx "rank-00000 rank-00001 " || fail "heartbeat/ holds $(ls "$tmp/a/heartbeat")"

# heartbeat is a file, not a folder: one warning, and the run completes as if nothing happened.
mkdir -p "$tmp/b"
echo "not a folder" >"$tmp/b/heartbeat"
STEPS=6 EVERY=3 write_config "$tmp/b.yaml" "$tmp/b"
: >"$tmp/train.log"
train_ranks 1 --config "$tmp/b.yaml" || fail "a run without heartbeats failed: $(tail -5 "$tmp/train.log")"
[ "$(grep -c 'warning: heartbeat' "$tmp/train.log")" -eq 1 ] || fail "expected one warning: $(cat "$tmp/train.log")"
expect_in "$(cat "$tmp/train.log")" "carrying on without heartbeats"
expect_in "$(cat "$tmp/train.log")" "done: 6 steps"
[ "$(cat "$tmp/b/heartbeat")" = "not a folder" ] || fail "the file in the way was changed"

echo "heartbeat_test: $checks checks passed"
