#!/usr/bin/env bash
# `baton show` with eval results, over the fixture's demo run (baton_web_fixture: real event
# files + ingest). The results are written by hand the way the trainer writes them: two `eval`
# lines in the run's last events file (inline mode) and three evals/step_<N>.json files (job
# mode), plus a file cut short. Checks: the sync pass of `show` stores them and names the bad
# file as a warning (exit 0); the text has the evals line (count, best) and the table of steps
# and losses; --json has `evals` in step order with every digit, and the rest of the answer is
# what it was before the results came; the store holds one row per step, the newest winning.
# No SLURM (--no-sync).
#   cli_show_evals_test.sh BATON FIXTURE
set -euo pipefail
source "$(dirname "$0")/../common/store_sql.sh"
baton=$1 fixture=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME"
db=$BATON_HOME/baton.db
fails=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
expect() { if grep -qF -- "$3" <<<"$2"; then ok "$1"; else fail "$1: no '$3' in:"; echo "$2"; fi; }
expect_not() { if grep -qF -- "$3" <<<"$2"; then fail "$1: '$3' in:"; echo "$2"; else ok "$1"; fi; }

ids=$("$fixture" --db "${BATON_STORE:-$db}" --runs-root "$tmp/runs" --no-compare)
demo=$(jq -r .demo_run_id <<<"$ids")
before_json=$("$baton" show "$demo" --no-sync --json)
before_text=$("$baton" show "$demo" --no-sync)
expect_not "a run without results has no evals line" "$before_text" "evals "
if jq -e '.evals == []' >/dev/null <<<"$before_json"; then ok "--json: no results, an empty list"; else fail "--json evals before: $(jq -c .evals <<<"$before_json")"; fi
run_dir=$(jq -r .run_dir <<<"$before_json")

# One result as the trainer writes it (EvalEvent).
result() { # STEP LOSS VIDEO ACTION MODE JOB
  jq -cn --argjson step "$1" --argjson loss "$2" --argjson video "$3" --argjson action "$4" \
    --arg mode "$5" --arg job "$6" --arg dir "$run_dir" \
    '{step: $step, checkpoint: "\($dir)/checkpoints/checkpoint_step_\($step)", mode: $mode,
      metrics: {loss: $loss, loss_video: $video, loss_action: $action}, episodes: 4,
      valid_frames: 128, seconds: 2.5, config_hash: "c0ffee", job_id: $job}'
}
mkdir -p "$run_dir/evals"
result 100 1.25 0.875 0.375 job 2001 | jq -c '. + {type: "eval"}' >"$run_dir/evals/step_100.json"
result 200 0.9375 0.625 0.3125 job 2002 | jq -c '. + {type: "eval"}' >"$run_dir/evals/step_200.json"
result 300 0.8125 null 0.25 job 2003 | jq -c '. + {type: "eval"}' >"$run_dir/evals/step_300.json"
printf '{"step": 500, "metrics": ' >"$run_dir/evals/step_500.json"  # an eval job killed mid-write
last_events=$(find "$run_dir/events" -name '*.jsonl' | sort -V | tail -1)
# Their times lie inside the last attempt's steps and saves (the fixture's steps fill it), so the
# time buckets, the eval bucket included, stay as they were: overlapping records count once.
result 400 0.75 0.5 0.25 inline 1001 | jq -c '. + {type: "eval", time: 1700001251, source: "trainer"}' >>"$last_events"
result 600 0.123456789012345 0.1 0.023456789012345 inline 1001 |
  jq -c '. + {type: "eval", time: 1700001647.5, source: "trainer"}' >>"$last_events"

show=$("$baton" show "$demo" --no-sync 2>"$tmp/stderr")
echo "$show"
expect "the bad file is named in a warning" "$(cat "$tmp/stderr")" "evals/step_500.json"
expect "the evals line: count and the best" "$show" "evals    5 checkpoints evaluated; best loss 0.123457 at step 600"
expect "the table's header" "$show" "STEP  LOSS      LOSS_VIDEO  LOSS_ACTION"
expect "a job-mode result's row" "$show" "100   1.25      0.875       0.375"
expect "a missing part is a dash" "$show" "300   0.8125    -           0.25"
expect "an inline result's row" "$show" "600   0.123457  0.1         0.0234568"

after_json=$("$baton" show "$demo" --no-sync --json 2>/dev/null)
want='[[100,1.25,0.875,0.375],[200,0.9375,0.625,0.3125],[300,0.8125,null,0.25],[400,0.75,0.5,0.25],[600,0.123456789012345,0.1,0.023456789012345]]'
got=$(jq -c '[.evals[] | [.step, .metrics.loss, .metrics.loss_video, .metrics.loss_action]]' <<<"$after_json")
if [ "$got" = "$want" ]; then ok "--json: evals in step order, every digit"; else fail "--json evals: $got"; fi
if jq -e '[.evals[] | keys] | all(. == ["metrics", "step"])' >/dev/null <<<"$after_json"; then ok "--json: each result is {step, metrics}"; else fail "--json keys: $(jq -c '[.evals[] | keys]' <<<"$after_json")"; fi
if [ "$(jq -S 'del(.evals)' <<<"$before_json")" = "$(jq -S 'del(.evals)' <<<"$after_json")" ]; then
  ok "--json: everything but evals is as before"
else
  fail "--json changed outside evals:"; diff <(jq -S 'del(.evals)' <<<"$before_json") <(jq -S 'del(.evals)' <<<"$after_json") || true
fi

# One row per step; a result recomputed (a rewritten file) replaces its row.
rows=$(store_sql "$db" "SELECT step, source, job_id FROM evals WHERE run_id = $demo ORDER BY step")
want_rows=$'100|file|2001\n200|file|2002\n300|file|2003\n400|event|1001\n600|event|1001'
if [ "$rows" = "$want_rows" ]; then ok "the store: one row per step, with its source"; else fail "store rows: $rows"; fi
result 200 0.5 0.25 0.25 job 2012 | jq -c '. + {type: "eval"}' >"$run_dir/evals/step_200.json"
again=$("$baton" show "$demo" --no-sync --json 2>/dev/null)
if jq -e '[.evals[] | select(.step == 200) | .metrics.loss] == [0.5] and (.evals | length) == 5' >/dev/null <<<"$again"; then
  ok "a rewritten result replaces its step's row"
else
  fail "after the rewrite: $(jq -c .evals <<<"$again")"
fi

if [ "$fails" -gt 0 ]; then echo "cli_show_evals_test: $fails check(s) failed"; exit 1; fi
echo "cli_show_evals_test: all checks passed"
