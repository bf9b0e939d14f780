#!/usr/bin/env bash
# A run on two SLURM nodes (the dev cluster's --nodes 2 instance: slurmd baton-n1 and baton-n2 on
# this machine), one trainer rank per node meeting over Gloo at the first node's name on a port
# derived from the job id:
#   A. preempted by an `urgent` job, requeued under the same job id, resumed `exact` on both
#      nodes, COMPLETED; its final weights and AdamW state equal, bit for bit, a one-node
#      two-rank run of the same config (outside SLURM).
#   B. preempted, and while its job waits `baton resume RUN --config CFG` with nothing changed
#      but slurm.nodes (2 -> 1): the waiting job is taken back, a new one-node job resumes
#      `exact` on one rank from the same checkpoint with the data position kept (the trainer
#      deals the rest of the epoch to the new world), and its final weights equal a one-rank
#      continuation of that checkpoint outside SLURM. A config that changes more than slurm: is
#      refused (78) naming the key.
# Both runs shard their AdamW state over their ranks (optim.shard: optimizer), so the per-rank
# optimizer files are written on two nodes and read back on two and on one.
# usage: two_nodes_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the two-node cluster is not up (slurm/dev_cluster.sh up --nodes 2).
source "$(dirname "$0")/lib.sh"
# 480 steps: at ~70 steps/s the run must still be training when the preemption lands.
STEPS=${BATON_IT_STEPS:-480}
export IT_SHARD=optimizer
eval "$(bash "$(dirname "$0")/../../slurm/dev_cluster.sh" env --nodes 2)"

require_idle_cluster
[[ $(sinfo -h -p debug -o '%D') == 2 ]] || { echo "FAIL  the debug partition of $SLURM_CONF has no 2 nodes" >&2; exit 2; }
make_dataset "$TMP/ds"
slurm2="slurm: {partition: debug, nodes: 2, ntasks_per_node: 1, cpus_per_task: 1, time: \"10:00\"}"

# ---------------------------------------------------------------- A: preempt, resume on 2 nodes
write_config "$TMP/a.yaml" it-two-nodes "$STEPS" "checkpoint: {every: 100, keep_last: 10}" "$slurm2"
submit "$TMP/a.yaml"
run_a=$run job_a=$job dir_a=$run_dir
grep -q -- '--nodes=2' "$dir_a/sbatch.sh" || fail "sbatch.sh does not ask for 2 nodes"
ok "submitted run $run_a as job $job_a: 2 nodes x 1 task"
start_reference "$TMP/a.yaml" "$TMP/reference_a" 2 1

wait_for 120 "attempt 0 to log step 5" attempt_progressed "$dir_a" "$job_a" 0 5
start0=$(grep -h '"type":"segment_start"' "$(events_file "$dir_a" "$job_a" 0)" | head -n1)
[[ $(jq .world_size <<<"$start0") == 2 ]] || fail "attempt 0 did not start 2 ranks: $start0"
nodes0=$(grep -h '"type":"attempt_start"' "$(events_file "$dir_a" "$job_a" 0)" | jq -r .nodes)
[[ $nodes0 == "baton-n[1-2]" ]] || fail "attempt 0 ran on '$nodes0', not both nodes"
ok "attempt 0 trains on $nodes0, world size 2"
preempt "$job_a" 1
ok "preempted: job $job_a requeued (PENDING, Restarts=1), hold cut with StartTime=now"

wait_for 300 "run $run_a to end" run_is "$run_a" COMPLETED FAILED CANCELLED
[[ $(run_status "$run_a") == COMPLETED ]] || fail "run $run_a ended $(run_status "$run_a")"
attempts=$("$baton" attempts "$run_a" --json)
a() { jq -r ".[$1].$2" <<<"$attempts"; }
[[ $(jq length <<<"$attempts") == 2 ]] || fail "expected 2 attempts: $attempts"
e0=$(a 0 last_step)
[[ $(a 0 end_reason) == preempted && $(a 1 resume_mode) == exact && $(a 1 step0) == "$e0" ]] ||
  fail "attempt 1: $(a 1 resume_mode) from $(a 1 step0) after $(a 0 end_reason) at $e0"
[[ $(a 0 world_size) == 2 && $(a 1 world_size) == 2 && $(a 1 last_step) == "$STEPS" ]] ||
  fail "world sizes $(a 0 world_size)/$(a 1 world_size), last step $(a 1 last_step)"
ok "run $run_a: 0..$e0 on 2 nodes (preempted) | $e0..$STEPS exact on 2 nodes (completed)"
finish_reference
same_final_state "$TMP/reference_a/checkpoints/checkpoint_step_$STEPS" "$dir_a/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state equal the one-node two-rank run's"

# ---------------------------------------------------------------- B: resume on 1 node
write_config "$TMP/b.yaml" it-two-to-one "$STEPS" "checkpoint: {every: 100, keep_last: 10}" "$slurm2"
submit "$TMP/b.yaml"
run_b=$run job_b=$job dir_b=$run_dir
wait_for 120 "attempt 0 of run $run_b to log step 5" attempt_progressed "$dir_b" "$job_b" 0 5
urgent=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J baton-it-urgent -o /dev/null --wrap 'sleep 2') ||
  fail "sbatch to urgent failed"
track_job "$urgent"
wait_for 90 "job $job_b to be requeued" requeued_not_done "$job_b" 1
wait_for 60 "attempt 0 of run $run_b to end" attempt_finished "$dir_b" "$job_b" 0
ok "run $run_b preempted on 2 nodes; job $job_b waits on its requeue hold"

sed -e 's/nodes: 2/nodes: 1/' "$TMP/b.yaml" >"$TMP/b1.yaml"
sed -e 's/seed: 11/seed: 12/' "$TMP/b1.yaml" >"$TMP/b1-bad.yaml"
rc=0
err=$("$baton" resume "$run_b" --config "$TMP/b1-bad.yaml" 2>&1) || rc=$?
[[ $rc == 78 && $err == *"run.seed: 11 -> 12"* && $err != *slurm.nodes* ]] ||
  fail "a resume that changes run.seed: exit $rc: $err"
[[ $(job_field "$job_b" JobState) == PENDING ]] || fail "the refused resume touched job $job_b"
ok "a resume config changing run.seed is refused (78) naming run.seed: 11 -> 12"

out=$("$baton" resume "$run_b" --config "$TMP/b1.yaml" --json) || fail "baton resume failed: $out"
job_b1=$(jq -r .job_id <<<"$out")
track_job "$job_b1"
[[ $(jq -r .cancelled_job <<<"$out") == "$job_b" && $(jq -r '.changed | join(",")' <<<"$out") == "slurm.nodes: 2 -> 1" ]] ||
  fail "baton resume printed: $out"
grep -q -- '--nodes=1' "$dir_b/sbatch.sh" || fail "sbatch.sh was not rewritten for 1 node"
grep -q 'nodes: 1' "$dir_b/run.yaml" || fail "run.yaml was not rewritten for 1 node"
ok "baton resume: job $job_b taken back, run $run_b continues as job $job_b1 on 1 node"

wait_for 300 "run $run_b to end" run_is "$run_b" COMPLETED FAILED CANCELLED
[[ $(run_status "$run_b") == COMPLETED ]] || fail "run $run_b ended $(run_status "$run_b")"
attempts=$("$baton" attempts "$run_b" --json)
[[ $(jq length <<<"$attempts") == 2 ]] || fail "expected 2 attempts: $attempts"
e0=$(a 0 last_step)
[[ $(a 1 job_id) == "$job_b1" && $(a 1 resume_mode) == exact && $(a 1 step0) == "$e0" ]] ||
  fail "attempt 1: job $(a 1 job_id), $(a 1 resume_mode) from $(a 1 step0); want $job_b1 exact from $e0"
[[ $(a 0 world_size) == 2 && $(a 1 world_size) == 1 && $(a 1 last_step) == "$STEPS" ]] ||
  fail "world sizes $(a 0 world_size)/$(a 1 world_size), last step $(a 1 last_step)"
grep -q "resharding data from 2 to 1 ranks" "$dir_b/logs/$job_b1.out" ||
  fail "the one-node attempt did not reshard the data position (logs/$job_b1.out)"
ok "run $run_b: 0..$e0 on 2 ranks | $e0..$STEPS exact on 1 rank, data position resharded"

# The same checkpoint continued on one rank outside SLURM gives the same final state.
mkdir -p "$TMP/reference_b/checkpoints"
cp -r "$dir_b/checkpoints/checkpoint_step_$e0" "$TMP/reference_b/checkpoints/"
start_reference "$TMP/b1.yaml" "$TMP/reference_b" 1 1 auto
finish_reference
same_final_state "$TMP/reference_b/checkpoints/checkpoint_step_$STEPS" "$dir_b/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state equal a one-rank continuation of checkpoint_step_$e0"
done_line
