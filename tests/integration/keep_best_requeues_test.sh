#!/usr/bin/env bash
# checkpoint.keep_best on the real dev cluster (docs/eval.md, "Retention"): a run with keep_last
# 2, keep_every 1000, keep_best {eval.loss, k: 2} and inline evals of every second save is
# preempted by `urgent` jobs 5 times (SLURM requeues the same job id each time), then preempted
# a 6th time and resumed with `baton resume --config` on 2 ranks instead of 1, and completes.
# At each of the 6 stops (the job waiting on its requeue hold, nothing running) and at the end,
# the checkpoints on disk are exactly the rule's set, computed here from the run's checkpoint
# events and eval results:
#   the newest keep_last saves | the multiples of keep_every | the k lowest eval.loss (ties to the
#   lower step) | every eval target without a result.
# Inline evals make the "results known at the last prune" exact: a target is evaluated right
# after its commit, before the next step, so at a stop every result on disk was there when the
# stop save pruned, and at the end every result but the final save's own.
# usage: keep_best_requeues_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
# Enough steps that the 6th preemption lands before the end (about 30 steps/s on one CPU).
STEPS=${BATON_IT_STEPS:-4000}
PY=${BATON_PYTHON:-/usr/bin/python3}
rule_lib=$(cd "$(dirname "$0")/../lib" && pwd) # retention_rule.py

require_idle_cluster
make_dataset "$TMP/ds"
slurm1="slurm: {partition: debug, ntasks_per_node: 1, cpus_per_task: 1, time: \"10:00\"}"
write_config "$TMP/kb.yaml" it-keep-best "$STEPS" \
  "checkpoint: {every: 100, keep_last: 2, keep_every: 1000, keep_best: {metric: eval.loss, k: 2}}" \
  "eval: {fraction: 0.25, seed: 3, every: 2, mode: inline}" "$slurm1"
submit "$TMP/kb.yaml"
ok "submitted run $run as job $job: $STEPS steps, a save every 100, inline evals every 200"

# check_kept WHEN [FINAL]: the checkpoints on disk are the rule's set, from the saves in the
# events files and the eval results (all of them at a stop; at the end, all but step STEPS's).
check_kept() {
  local out
  out=$("$PY" - "$run_dir" "$STEPS" "${2:-}" "$rule_lib" <<'PY' 2>&1
import glob, json, sys
sys.path.insert(0, sys.argv[4])
from retention_rule import on_disk, rule_set
run, steps, final = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "final"
every, eval_every, keep_last, keep_every, k = 100, 2, 2, 1000, 2
saves = set()
for path in glob.glob(run + "/events/*.jsonl"):
    for line in open(path):
        r = json.loads(line)
        if r.get("type") == "checkpoint":
            saves.add(r["step"])
saves = sorted(saves)
value = {}
for path in glob.glob(run + "/evals/step_*.json"):
    r = json.load(open(path))
    if not (final and r["step"] == steps):
        value[r["step"]] = r["metrics"]["loss"]
def target(s):
    return s == steps or (s % every == 0 and (s // every) % eval_every == 0)
want = rule_set(saves, value, target, keep_last, keep_every, k)
have = on_disk(run)
if have != want:
    sys.exit("on disk %s, the rule's set %s (saves %s, values %s)" % (sorted(have), sorted(want), saves, value))
best = sorted(value, key=lambda s: (value[s], s))[:k]
print("kept %s of %d saves, best %s of %d results" % (sorted(have), len(saves), best, len(value)))
PY
  ) || fail "$1: the kept set is not the rule's: $out"
  ok "$1: $out"
}

# stop N: an `urgent` job preempts the run; once attempt N-1 has ended and the job waits on its
# requeue hold (Restarts=N), nothing writes the folder: the kept set is checked there.
stop() {
  local n=$1 urgent
  wait_for 120 "attempt $((n - 1)) to log 20 steps" attempt_advanced "$run_dir" "$job" $((n - 1)) 20
  urgent=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J baton-it-urgent -o /dev/null --wrap 'sleep 2') ||
    fail "sbatch to urgent failed"
  track_job "$urgent"
  wait_for 90 "job $job to be requeued (Restarts=$n)" requeued_not_done "$job" "$n"
  wait_for 60 "attempt $((n - 1)) to end" attempt_finished "$run_dir" "$job" $((n - 1))
  check_kept "stop $n after $(($(last_step_in "$(events_file "$run_dir" "$job" "$((n - 1))")") + 1)) steps"
}

for n in 1 2 3 4 5; do
  stop "$n"
  release_now "$job"
done
stop 6
sed -e 's/ntasks_per_node: 1/ntasks_per_node: 2/' "$TMP/kb.yaml" >"$TMP/kb2.yaml"
out=$("$baton" resume "$run" --config "$TMP/kb2.yaml" --json) || fail "baton resume failed: $out"
job2=$(jq -r .job_id <<<"$out")
track_job "$job2"
[[ $(jq -r .cancelled_job <<<"$out") == "$job" ]] || fail "baton resume printed: $out"
ok "5 requeues, then resumed on 2 ranks as job $job2 (waiting job $job taken back)"

wait_for 400 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
attempts=$("$baton" attempts "$run" --json)
[[ $(jq length <<<"$attempts") == 7 ]] || fail "expected 7 attempts: $attempts"
[[ $(jq -c '[.[].world_size]' <<<"$attempts") == "[1,1,1,1,1,1,2]" ]] ||
  fail "world sizes $(jq -c '[.[].world_size]' <<<"$attempts"), want six of 1 then 2"
[[ $(jq -c '[.[1:][].resume_mode] | unique' <<<"$attempts") == '["exact"]' ]] ||
  fail "resume modes $(jq -c '[.[].resume_mode]' <<<"$attempts")"
[[ $(jq -r '.[6].job_id' <<<"$attempts") == "$job2" && $(jq -r '.[5].restart_count' <<<"$attempts") == 5 ]] ||
  fail "attempts: $(jq -c '[.[] | "\(.job_id).\(.restart_count)"]' <<<"$attempts")"
ok "run $run COMPLETED: attempts $job.0..$job.5 on 1 rank, $job2.0 on 2, each later one exact"
n_evals=$(ls "$run_dir"/evals/step_*.json | wc -l)
((n_evals == STEPS / 200)) || fail "$n_evals eval results, want $((STEPS / 200))"
check_kept "the end ($n_evals results)" final
done_line
