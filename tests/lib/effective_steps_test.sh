#!/usr/bin/env bash
# tests/lib/effective_steps.py reads attempts in the order they ran: restart 10 after restart 2,
# job 100 after job 99, in-job restarts after their job start, a later attempt's row replacing an
# earlier one's at the same step.
# usage: effective_steps_test.sh
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/events"
# step FILE STEP LOSS: one step record.
step() {
  printf '{"type":"step","step":%d,"lr":0.1,"loss":%s,"grad_norm":1.0}\n' "$2" "$3" >>"$tmp/events/$1"
}
printf '{"type":"attempt_start"}\n' >"$tmp/events/99.0.jsonl"
step 99.0.jsonl 0 0.5
step 99.0.jsonl 1 0.6
step 99.2.jsonl 1 0.7    # restart 2 redoes step 1
step 99.10.jsonl 1 0.8   # restart 10, later: its row wins
step 99.10.jsonl 2 0.9
step 99.10.1.jsonl 2 1.1 # an in-job restart of restart 10
step 100.0.jsonl 3 1.2   # a resume as job 100, after job 99
step 100.0.jsonl 2 1.3
got=$(python3 "$(dirname "$0")/effective_steps.py" "$tmp")
want=$'0 0.1 0.5 1.0\n1 0.1 0.8 1.0\n2 0.1 1.3 1.0\n3 0.1 1.2 1.0'
if [[ $got != "$want" ]]; then
  printf 'FAIL: effective_steps.py printed\n%s\nwant\n%s\n' "$got" "$want" >&2
  exit 1
fi
echo "PASS effective_steps_test: attempts in the order they ran"
