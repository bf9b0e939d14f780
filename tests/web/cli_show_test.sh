#!/usr/bin/env bash
# `baton show` / `baton attempts` over the run history the web tests use (baton_web_fixture:
# real event files + ingest): how each attempt ended, with the trainer's message; the skipped
# non-finite steps with their episode ids; the same in --json; control characters in a message
# escaped, never sent to the terminal raw; an ended attempt's SLURM state that is only the one
# last seen while it ran is labelled so; where the demo run's time went (ETTR, buckets that add up
# to its wall time, the Young/Daly interval). No SLURM (--no-sync).
#   cli_show_test.sh BATON FIXTURE
set -euo pipefail
source "$(dirname "$0")/../common/store_sql.sh"
source "$(dirname "$0")/../common/run_folder.sh"
baton=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME"
fails=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
# expect WHAT TEXT NEEDLE: TEXT holds NEEDLE (a fixed string)
expect() { if grep -qF -- "$3" <<<"$2"; then ok "$1"; else fail "$1: no '$3' in:"; echo "$2"; fi; }
expect_not() { if grep -qF -- "$3" <<<"$2"; then fail "$1: '$3' in:"; echo "$2"; else ok "$1"; fi; }

ids=$("$fixture" --db "${BATON_STORE:-$BATON_HOME/baton.db}" --runs-root "$tmp/runs")
nf=$(jq -r .nonfinite_run_id <<<"$ids")
demo=$(jq -r .demo_run_id <<<"$ids")
markup='ep_<img src=x onerror=alert(2)>'
message="3 consecutive steps with a NaN/Inf loss or gradient norm (train.max_nonfinite_steps 3), last at step 45; episodes ep_000012, $markup"

show=$("$baton" show "$nf" --no-sync)
echo "$show"
expect "status and reason carry the message" "$show" "FAILED — diverged at step 45 (exit code 79): $message"
expect "skipped-step count" "$show" "skipped  4 non-finite steps (not applied)"
expect "first skipped step, 1-based, with its episodes as text" "$show" "step 16 (attempt 1): ep_000003, $markup"
expect "a skipped step of the second attempt" "$show" "step 43 (attempt 2): ep_000011, ep_000012"
expect "the diverged attempt, with the trainer's message" "$show" "2 (3003.1): failed: diverged — exit 79: $message"
expect "the killed attempt says it left no segment_end" "$show" "1 (3003.0): requeued: crashed — exit 139 — signal SEGV (the trainer wrote no segment_end)"
expect "a failed run's show ends with its job log's tail" "$show" "last lines of logs/3003.out (attempt 3003.1):"
expect "the log tail holds the trainer's error line" "$show" "  | baton-train: error: 3 consecutive steps"

attempts=$("$baton" attempts "$nf" --no-sync)
expect "attempts: the same endings" "$attempts" "2 (3003.1): failed: diverged — exit 79: $message"

demo_show=$("$baton" show "$demo" --no-sync)
expect_not "a run without skipped steps has no skipped line" "$demo_show" "non-finite"
expect "preempted attempts name the trainer's reason" "$demo_show" "1 (1001.0): requeued: preempted — exit 75 — signal TERM — SLURM REQUEUED (trainer: signal)"
expect "a completed attempt" "$demo_show" "3 (1001.2): done: completed — exit 0"
# The sync pass saw attempt 2 RUNNING while it ran, and never after it ended: that is not the
# attempt's final SLURM state, and show says so; the requeued ones have SLURM's REQUEUED.
expect_not "an ended attempt's RUNNING is not shown as its SLURM state" "$demo_show" "SLURM RUNNING"
expect "it is shown as the state last seen" "$demo_show" "3 (1001.2): done: completed — exit 0 — SLURM last seen RUNNING (final state not known)"
expect "a requeued attempt has SLURM's REQUEUED" "$demo_show" "2 (1001.1): requeued: preempted — exit 75 — signal TERM — SLURM REQUEUED"
demo_json=$("$baton" show "$demo" --no-sync --json)
if jq -e '[.attempts[] | [.slurm_state, .slurm_state_kind]] == [["REQUEUED", "final"], ["REQUEUED", "final"], ["RUNNING", "last_seen"]]' >/dev/null <<<"$demo_json"; then
  ok "--json: slurm_state_kind says final or last_seen"
else
  fail "--json: slurm_state_kind"; jq -c '[.attempts[] | [.slurm_state, .slurm_state_kind]]' <<<"$demo_json"
fi

# Where the demo run's time went: the buckets add up to its wall time since submit (its record's
# own times), productive is the sum of its counted steps' times (the store's rows), two
# preemptions give a Young/Daly interval.
expect "show: the run's ETTR" "$demo_show" "ETTR 71.5 % (72.8 % without queue)"
expect "show: the checkpoint interval that minimises lost time" "$demo_show" "interval that minimises lost time: every 40 steps"
counted=$(store_sql "$BATON_HOME/baton.db" "SELECT SUM(step_time_s) FROM steps WHERE run_id = $demo AND superseded = 0 AND nonfinite = 0")
if jq -e --argjson counted "$counted" '
    (.attempts[-1].ended_at - .created_at) as $wall
    | (.time.buckets | add) as $sum
    | ($sum - $wall | fabs) <= 0.01 * $wall and (.time.wall_s - $wall | fabs) < 1e-6
      and ((.time.buckets.productive - $counted) | fabs) <= 1e-9 * $counted
      and .time.buckets.requeue_hold > 0
      and .time.buckets.rolled_back > 0 and (.time.attempts | length) == 3
      and ([.time.attempts[] | (.buckets | add) - .wall_s | fabs] | max) < 1e-6
      and .time.checkpoint_interval.interruptions == 2 and .time.checkpoint_interval.seconds > 0' \
    >/dev/null <<<"$demo_json"; then
  ok "--json: time buckets add up to the wall time; productive = the counted steps' times ($counted s)"
else
  fail "--json: time buckets"; jq -c '.time' <<<"$demo_json"
fi

json=$("$baton" show "$nf" --no-sync --json)
check_json() { if jq -e "$2" >/dev/null <<<"$json"; then ok "$1"; else fail "$1 ($2)"; fi; }
check_json "--json: nonfinite_steps" '.nonfinite_steps == 4 and .nonfinite_superseded == 0'
check_json "--json: skipped steps with 0-based index, attempt (1-based), null loss, episodes" \
  ".nonfinite | length == 4 and .[0].step == 15 and .[0].attempt == 1 and .[0].grad_norm == null
   and .[0].episodes == [\"ep_000003\", \"$markup\"] and .[1].step == 42 and .[1].loss == null"
check_json "--json: trainer end per attempt" \
  ".attempts[1].trainer_end_reason == \"diverged\" and .attempts[1].trainer_exit_code == 79
   and .attempts[1].trainer_message == \"$message\" and .attempts[0].trainer_end_reason == null
   and .attempts[0].trainer_message == null and .attempts[0].exit_code == 139"
json=$("$baton" attempts "$nf" --no-sync --json)
check_json "attempts --json: trainer message" ".[1].trainer_message == \"$message\""

# A later attempt whose message holds terminal control sequences (ESC, BEL, a C1 CSI, newline).
run_dir=$("$baton" show "$nf" --no-sync --json | jq -r .run_dir)
printf '%s\n' \
  '{"type":"attempt_start","time":1710000900,"source":"launcher","job_id":"3003","restart_count":2,"nodes":"n","checkpoint":null,"mode":"exact","step0":40,"resume_warmup_steps":0}' \
  '{"type":"segment_end","time":1710000901,"source":"trainer","step":40,"reason":"error","exit_code":70,"message":"\u001b]0;owned\u0007 \u001b[31mred\u001b[0m \u009b2J next\nline"}' \
  '{"type":"attempt_end","time":1710000902,"source":"launcher","exit_code":70,"action":"fail","reason":"crashed"}' \
  >"$(events_file "$run_dir" 3003 2)"
attempts=$("$baton" attempts "$nf" --no-sync)
expect "control characters are escaped" "$attempts" '\x1b]0;owned\x07 \x1b[31mred\x1b[0m \u009b2J next\nline'
if LC_ALL=C grep -q $'\x1b' <<<"$attempts"; then fail "a raw ESC reached the terminal"; else ok "no raw ESC in the output"; fi
if LC_ALL=C grep -q $'\xc2\x9b' <<<"$attempts"; then fail "a raw C1 CSI reached the terminal"; else ok "no raw C1 CSI in the output"; fi

if [ "$fails" -ne 0 ]; then
  echo "cli show test: $fails failed"
  exit 1
fi
echo "cli show test: all passed"
