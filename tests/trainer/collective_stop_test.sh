#!/usr/bin/env bash
# A rank blocked in a collective, without the launcher (docs/trainer.md, "Stopping and
# resuming"): in a 2-rank run rank 1 is stopped (SIGSTOP), so rank 0 waits for it in the step's
# collectives. A stop signal still takes effect on rank 0: it leaves BATON_STOP_WAIT_S after the
# signal, or at once on a second one, with exit 75 naming the collective; without a signal it
# leaves after BATON_COLLECTIVE_TIMEOUT_S with exit 70. (The old trainer waited in Gloo for 600 s
# whatever came.) usage: collective_stop_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 8 3:5
pids=()
cleanup() { for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; [ -n "${KEEP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT

# heartbeat_pid DIR RANK: the trainer's PID, from its heartbeat record.
heartbeat_pid() { sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$1/heartbeat/rank-0000$2" 2>/dev/null; }

# start_pair DIR VAR=VALUE...: two ranks training for minutes (each killed after 90 s at most);
# once both have logged steps, $w0 is rank 0's waiter, $t0 and $t1 the trainers' PIDs.
start_pair() {
  local dir=$1 store="$tmp/rdzv.$RANDOM.$RANDOM" r ev; shift
  STEPS=200000 EVERY=100000 ACCUM=1 write_config "$tmp/run.yaml" "$dir"
  for r in 0 1; do
    env "$@" RANK=$r WORLD_SIZE=2 BATON_RDZV_FILE="$store" timeout -s KILL 90 "$bt" train \
      --config "$tmp/run.yaml" >"$tmp/rank$r.log" 2>&1 &
    pids+=($!)
    eval "w$r=$!"
  done
  ev=$(events_file "$dir" local 0)
  for _ in $(seq 1200); do
    grep -qs '"type":"step"' "$ev" && [ -n "$(heartbeat_pid "$dir" 1)" ] && break
    sleep 0.05
  done
  t0=$(heartbeat_pid "$dir" 0)
  t1=$(heartbeat_pid "$dir" 1)
  [ -n "$t0" ] && [ -n "$t1" ] || fail "the ranks did not start: $(tail -5 "$tmp/rank0.log")"
}

# finish_pair: rank 0's exit code in $rc and its seconds since $since in $took; rank 1 is killed.
finish_pair() {
  rc=0
  wait "$w0" || rc=$?
  took=$(awk -v a="$since" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  kill -KILL "$t1" 2>/dev/null || true
  wait "$w1" 2>/dev/null || true
}

# 1. One stop signal: rank 0 leaves BATON_STOP_WAIT_S (2) after it.
start_pair "$tmp/a" BATON_STOP_WAIT_S=2
kill -STOP "$t1"
sleep 0.5
since=$(date +%s.%N)
kill -TERM "$t0"
finish_pair
[ "$rc" -eq 75 ] || fail "a stop while rank 1 is stopped: exit $rc, expected 75: $(tail -5 "$tmp/rank0.log")"
awk -v t="$took" 'BEGIN { exit !(t >= 1.5 && t < 20) }' || fail "rank 0 left $took s after the signal"
expect_in "$(cat "$tmp/rank0.log")" "rank 0 of 2: a stop signal (TERM) came, and the other ranks did not join the"
expect_in "$(cat "$tmp/rank0.log")" "leaving without a new checkpoint"
ev=$(events_file "$tmp/a" local 0)
grep '"type":"segment_end"' "$ev" | grep -q '"exit_code":75' || fail "no segment_end with exit 75 in $ev"
echo "ok: a stop signal took effect on a rank waiting for a stopped peer, $took s later (BATON_STOP_WAIT_S 2)"

# 2. A second stop signal: at once, whatever the stop wait (60 s by default).
start_pair "$tmp/b"
kill -STOP "$t1"
sleep 0.5
kill -INT "$t0"
sleep 1
since=$(date +%s.%N)
kill -INT "$t0"
finish_pair
[ "$rc" -eq 75 ] || fail "a second stop signal: exit $rc, expected 75: $(tail -5 "$tmp/rank0.log")"
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "rank 0 left $took s after the second signal"
expect_in "$(cat "$tmp/rank0.log")" "a stop signal (INT) came"
echo "ok: a second stop signal ended the wait at once ($took s)"

# 3. No signal: the collective times out after BATON_COLLECTIVE_TIMEOUT_S (3) with a named 70.
start_pair "$tmp/c" BATON_COLLECTIVE_TIMEOUT_S=3
since=$(date +%s.%N)
kill -STOP "$t1"
finish_pair
[ "$rc" -eq 70 ] || fail "a stopped peer: exit $rc, expected 70: $(tail -5 "$tmp/rank0.log")"
awk -v t="$took" 'BEGIN { exit !(t >= 2.5 && t < 25) }' || fail "rank 0 left $took s after the peer stopped"
expect_in "$(cat "$tmp/rank0.log")" "s (BATON_COLLECTIVE_TIMEOUT_S 3 s): a peer rank is hung, stopped or gone"

# 4. A limit that is not decimal seconds is a config error naming it.
STEPS=2 write_config "$tmp/d.yaml" "$tmp/d"
rc=0
RANK=0 WORLD_SIZE=2 BATON_RDZV_FILE="$tmp/rdzv.d" BATON_STOP_WAIT_S=0x10 timeout 60 "$bt" train \
  --config "$tmp/d.yaml" >"$tmp/d.log" 2>&1 || rc=$?
[ "$rc" -eq 78 ] || fail "BATON_STOP_WAIT_S=0x10: exit $rc, expected 78: $(tail -3 "$tmp/d.log")"
expect_in "$(cat "$tmp/d.log")" "BATON_STOP_WAIT_S='0x10' is not a number of seconds"

echo "collective_stop_test: $checks checks passed"
