#!/usr/bin/env bash
# eval.mode job on the real dev cluster (docs/eval.md, "Eval jobs"), with `baton watch` running:
#   ten    20 steps, a save every 2 (keep_last 10): 10 committed checkpoints, each evaluated by
#          its own SLURM job; exactly 10 results, at exactly the saves' steps, each arriving
#          within 60 s plus the eval's own runtime after its commit (latencies printed); one job
#          per checkpoint, never a second, also after `watch` restarts.
#   fails  4 steps, one save, whose eval fails (a baton-train wrapper exits 3 for it): the job is
#          recorded failed with the log's reason, retried once, then reported (an eval_failed
#          incident, a `watch` line, `baton show`); the run still COMPLETES, nothing more is
#          submitted for it.
#   slow   2 steps, one save, whose eval takes 30 s (the wrapper sleeps first): its eval job is
#          preempted by an `urgent` job, requeued (SLURM's PreemptMode REQUEUE), runs again and
#          evaluates the checkpoint; still one eval job (one row, attempt 1) for it.
#   inline 8 steps, a save every 2, eval.mode inline: the trainer evaluates each save between
#          steps, and `baton show --json` counts those seconds as the `eval` time bucket (the sum
#          of the `eval` events' seconds), out of productive and other; the buckets still add up
#          to the wall time.
# usage: eval_jobs_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"

"$bt" eval --help >/dev/null 2>&1 || fail "$bt has no eval command"
require_idle_cluster
make_dataset "$TMP/ds"

# The eval jobs run whatever baton-train the watch finds: this one fails the eval of any
# checkpoint of the run named evalfail, and is baton-train itself otherwise.
wrap=$TMP/bt-wrap.sh
cat >"$wrap" <<WRAP
#!/bin/bash
if [[ \$1 == eval && "\$*" == *-evalslow/* ]]; then sleep 30; fi
if [[ \$1 == eval && "\$*" == *-evalfail/* ]]; then
  echo "baton-train: injected eval failure" >&2
  exit 3
fi
exec "$bt" "\$@"
WRAP
chmod +x "$wrap"

slurm="slurm: {partition: debug, cpus_per_task: 1, time: \"10:00\"}"
evals="eval: {fraction: 0.25, seed: 3, every: 1, mode: job, time: \"5:00\", cpus_per_task: 1}"
write_config "$TMP/ten.yaml" evaljobs 20 "$slurm" "$evals" "checkpoint: {every: 2, keep_last: 10}"
write_config "$TMP/fails.yaml" evalfail 4 "$slurm" "$evals" "checkpoint: {every: 4}"

WATCH_PID=
start_watch() {
  BATON_TRAIN_BIN=$wrap "$baton" watch --interval 2 >>"$TMP/watch.log" 2>&1 &
  WATCH_PID=$!
}
stop_watch() { kill "$WATCH_PID" 2>/dev/null && wait "$WATCH_PID" 2>/dev/null || true; }
# The eval jobs watch submitted are scancelled on exit with the runs' own jobs.
track_eval_jobs() {
  local r j
  for r in ${ten:-} ${fails:-} ${slow:-}; do
    for j in $(eval_jobs "$r" 2>/dev/null | jq -r '.[].job_id | select(. != "")'); do track_job "$j"; done
  done
}
trap 'stop_watch; track_eval_jobs; cleanup' EXIT
start_watch

submit "$TMP/ten.yaml"
ten=$run ten_dir=$run_dir
submit "$TMP/fails.yaml"
fails=$run fails_dir=$run_dir
ok "runs $ten (10 saves) and $fails (an eval that fails) submitted, watch running"

# eval_jobs RUN: the run's eval-job rows.
eval_jobs() { "$baton" show "$1" --json --no-sync | jq -c '.eval_jobs'; }
done_when() {
  local a b
  a=$(eval_jobs "$ten")
  b=$(eval_jobs "$fails")
  [[ $(jq '[.[] | select(.state == "done")] | length' <<<"$a") == 10 ]] &&
    [[ $(jq '[.[] | select(.reported)] | length' <<<"$b") == 1 ]] &&
    run_is "$ten" COMPLETED && run_is "$fails" COMPLETED
}
wait_for 420 "10 evaluated checkpoints and a reported failure" done_when

# Exactly the saves' steps, one result each.
steps=$(cd "$ten_dir/evals" && ls step_*.json | sed 's/step_\(.*\)\.json/\1/' | sort -n | xargs)
[[ $steps == "2 4 6 8 10 12 14 16 18 20" ]] || fail "eval results at steps '$steps'"
for s in $steps; do
  jq -e --argjson s "$s" '.step == $s and (.metrics.loss | type) == "number"' "$ten_dir/evals/step_$s.json" \
    >/dev/null || fail "evals/step_$s.json: $(cat "$ten_dir/evals/step_$s.json")"
done
ok "10 eval results at exactly steps $steps"

# Latency: the result file's time against the checkpoint event's (the commit).
worst=0
for s in $steps; do
  committed=$(cat "$ten_dir"/events/*.jsonl | jq -r --argjson s "$s" \
    'select(.type == "checkpoint" and .step == $s) | .time' | head -n1)
  [[ -n $committed ]] || fail "no checkpoint event for step $s"
  arrived=$(date -r "$ten_dir/evals/step_$s.json" +%s.%N)
  runtime=$(jq -r '.seconds // 0' "$ten_dir/evals/step_$s.json")
  latency=$(echo "$arrived - $committed" | bc -l)
  printf '      step %2d: result %.1f s after its commit (eval itself %.1f s)\n' "$s" "$latency" "$runtime"
  (($(echo "$latency <= 60 + $runtime" | bc -l))) || fail "step $s: ${latency}s > 60 s + ${runtime}s"
  (($(echo "$latency > $worst" | bc -l))) && worst=$latency
done
ok "every result within 60 s plus its eval's runtime (worst $(printf %.1f "$worst") s)"

rows=$(eval_jobs "$ten")
[[ $(jq 'length' <<<"$rows") == 10 && $(jq '[.[] | select(.attempt == 1)] | length' <<<"$rows") == 10 ]] ||
  fail "run $ten's eval jobs: $rows"
ok "one eval job per checkpoint"

rows=$(eval_jobs "$fails")
jq -e 'length == 2 and ([.[].attempt] == [1, 2]) and all(.[]; .state == "failed" and .step == 4)' \
  <<<"$rows" >/dev/null || fail "run $fails's eval jobs: $rows"
jq -e 'all(.[]; .reason | test("injected eval failure")) and all(.[]; .reason | test("FAILED"))' \
  <<<"$rows" >/dev/null || fail "the failures' reasons: $rows"
grep -q "run $fails: the eval of step 4 failed 2 times" "$TMP/watch.log" || fail "no report in watch.log"
"$baton" incidents "$fails" --json | jq -e '[.[] | select(.kind == "eval_failed" and .step == 4)] | length == 1' \
  >/dev/null || fail "no eval_failed incident: $("$baton" incidents "$fails")"
"$baton" show "$fails" --no-sync | grep -q "step 4: failed 2 times (reported)" || fail "baton show: $("$baton" show "$fails" --no-sync)"
ok "the failing eval: recorded with its reason, retried once, reported; the run COMPLETED"

# Restarted: no job again for any checkpoint.
stop_watch
start_watch
sleep 8
stop_watch
[[ $(eval_jobs "$ten" | jq length) == 10 && $(eval_jobs "$fails" | jq length) == 2 ]] ||
  fail "a restarted watch submitted more eval jobs"
n=$(grep -c "submitted eval job" "$TMP/watch.log")
[[ $n == 12 ]] || fail "watch submitted $n eval jobs, want 12 (10 + the failing one twice)"
ok "a restarted watch submits nothing more ($n eval jobs in all)"
# Preempted while it evaluates: requeued, then done, as one job.
write_config "$TMP/slow.yaml" evalslow 2 "$slurm" "$evals" "checkpoint: {every: 2}"
submit "$TMP/slow.yaml"
slow=$run slow_dir=$run_dir
start_watch
slow_job() { eval_jobs "$slow" | jq -r '.[0].job_id // empty'; }
slow_running() { local j; j=$(slow_job); [[ -n $j && $(job_field "$j" JobState) == RUNNING ]]; }
wait_for 120 "run $slow's eval job to run" slow_running
ej=$(slow_job)
track_job "$ej"
sleep 2
preempt "$ej" 1
wait_for 180 "run $slow's checkpoint to be evaluated" test -e "$slow_dir/evals/step_2.json"
wait_for 30 "its eval job to be recorded done" \
  bash -c "[[ \$('$baton' show $slow --json --no-sync | jq -r '.eval_jobs[0].state') == done ]]"
stop_watch
rows=$(eval_jobs "$slow")
jq -e --arg j "$ej" 'length == 1 and .[0].attempt == 1 and .[0].job_id == $j' <<<"$rows" >/dev/null ||
  fail "run $slow's eval jobs after the preemption: $rows"
((${job_restarts:=$(job_field "$ej" Restarts)} >= 1)) || fail "eval job $ej Restarts=$job_restarts"
ok "a preempted eval job was requeued (Restarts=$job_restarts) and evaluated its checkpoint, one job"
# Inline evals: their own time bucket.
write_config "$TMP/inline.yaml" evalinline 8 "$slurm" "eval: {fraction: 0.25, seed: 3, every: 1, mode: inline}" \
  "checkpoint: {every: 2}"
submit "$TMP/inline.yaml"
inline=$run inline_dir=$run_dir
wait_for 180 "run $inline to end" run_is "$inline" COMPLETED FAILED CANCELLED
[[ $(run_status "$inline") == COMPLETED ]] || fail "run $inline ended $(run_status "$inline")"
eval_s=$(cat "$inline_dir"/events/*.jsonl | jq -s '[.[] | select(.type == "eval") | .seconds] | add')
n_evals=$(cat "$inline_dir"/events/*.jsonl | jq -s '[.[] | select(.type == "eval")] | length')
json=$("$baton" show "$inline" --json)
# The trainer writes a step, a save and an eval one after another, each event's time its end:
# they never overlap, so the bucket is the events' sum to within the microseconds of the clocks.
jq -e --argjson s "$eval_s" --argjson n "$n_evals" '.time as $t
  | $n == 4 and $s > 0 and ($t.buckets.eval - $s | fabs) <= 1e-3
    and ($t.attempts[0].buckets.eval - $s | fabs) <= 1e-3
    and (($t.buckets | add) - $t.wall_s | fabs) <= 0.01 * $t.wall_s
    and $t.buckets.productive > 0' >/dev/null <<<"$json" ||
  fail "run $inline: $n_evals eval events, $eval_s s; time: $(jq -c .time <<<"$json")"
ok "inline evals: $n_evals at the saves, $(jq '.time.buckets.eval' <<<"$json") s in the eval bucket = the events' $eval_s s"
echo "PASS ($checks checks)"
