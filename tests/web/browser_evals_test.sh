#!/usr/bin/env bash
# Browser test of eval results on the run page and in compare: the fixture's demo run
# (baton_web_fixture, through the real ingest path) gets eval results written by hand the way
# the trainer writes them — two `eval` lines in its last events file (inline mode) and three
# evals/step_<N>.json files (job mode) — which `baton show` ingests; then `baton serve` on a
# free port and headless chromium (browser_evals_test.cjs). Leaves screenshots in ARTIFACTS_DIR.
#   browser_evals_test.sh BATON FIXTURE NODE_MODULES ARTIFACTS_DIR
set -euo pipefail
baton=$1 fixture=$2 node_modules=$3 artifacts=$4
here=$(cd "$(dirname "$0")" && pwd)
test_name=browser_evals_test
# shellcheck source=browser_lib.sh
. "$here/browser_lib.sh"
browser_setup
mkdir -p "$artifacts"
ids=$("$fixture" --db "$BATON_HOME/baton.db" --runs-root "$tmp/runs")
echo "fixture: $ids"
demo=$(jq -r .demo_run_id <<<"$ids")
run_dir=$("$baton" show "$demo" --json --no-sync | jq -r .run_dir)

# One result as the trainer writes it (EvalEvent): step, checkpoint, mode, metrics, counts.
result() { # STEP LOSS VIDEO ACTION MODE
  jq -cn --argjson step "$1" --argjson loss "$2" --argjson video "$3" --argjson action "$4" \
    --arg mode "$5" --arg dir "$run_dir" \
    '{step: $step, checkpoint: "\($dir)/checkpoints/checkpoint_step_\($step)", mode: $mode,
      metrics: {loss: $loss, loss_video: $video, loss_action: $action}, episodes: 4,
      valid_frames: 128, seconds: 2.5, config_hash: "c0ffee", job_id: "1001"}'
}
mkdir -p "$run_dir/evals"
for spec in "100 1.25 0.875 0.375" "200 0.9375 0.625 0.3125" "300 0.8125 0.5625 0.25"; do
  read -r step loss video action <<<"$spec"
  result "$step" "$loss" "$video" "$action" job | jq -c '. + {type: "eval"}' \
    >"$run_dir/evals/step_$step.json"
done
last_events=$(find "$run_dir/events" -name '*.jsonl' | sort -V | tail -1)
for spec in "400 0.75 0.5 0.25" "600 0.6875 0.4375 0.25"; do
  read -r step loss video action <<<"$spec"
  result "$step" "$loss" "$video" "$action" inline |
    jq -c '. + {type: "eval", time: 1700000000.5, source: "trainer"}' >>"$last_events"
done
# The sync pass of a query command ingests both.
"$baton" show "$demo" --no-sync >/dev/null

start_serve --no-reconcile --interval 1
echo "serving at $url"

BASE_URL=$url FIXTURE_IDS=$ids PW_NODE_MODULES=$node_modules CHROMIUM=$chromium \
  ARTIFACTS=$artifacts USER_DATA_DIR=$tmp/chromium-profile node "$here/browser_evals_test.cjs"
