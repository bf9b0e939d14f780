#!/usr/bin/env bash
# A clean run that is disturbed but never by a bad node excludes nothing (docs/nodes.md), on the
# one-node dev cluster with the real trainer and `baton watch` running its node ledger:
#   - a 2-rank run is preempted 3 times by `urgent` jobs (requeues, exact resumes; the test cuts
#     each hold, so watch is told not to: slurm.release_requeue_hold false) and once, in
#     between, the test SIGSTOPs a rank picked at random: the launcher declares a hang and
#     restarts the trainer in the job;
#   - the run COMPLETES, bit-identical to an uninterrupted 2-rank run;
#   - the ledger holds exactly one incident, the hang, against the node; it is `ok` (a hang is
#     one incident: it takes two), no job got an ExcNodeList and watch set none. Preemptions are
#     never incidents.
# usage: hang_preempt_no_exclusion_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
STEPS=${BATON_IT_STEPS:-400}
require_idle_cluster
((CPUS >= 2)) || { echo "FAIL  needs 2 CPUs in the debug partition" >&2; exit 2; }
unset BATON_NODES_CONFIG BATON_NO_PREFLIGHT
export IT_TRAIN="{dtype: float32, log_every: 50, hang_min_s: 3, hang_factor: 5, first_step_timeout_s: 30}"
make_dataset "$TMP/ds"
write_config "$TMP/r.yaml" it-clean "$STEPS" "checkpoint: {every: 40, keep_last: 20}" \
  "slurm: {partition: debug, ntasks_per_node: 2, cpus_per_task: 1, time: \"10:00\", release_requeue_hold: false}"
start_reference "$TMP/r.yaml" "$TMP/reference" 2 1
heartbeat_pid() { sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$1/heartbeat/rank-0000$2" 2>/dev/null; }

submit "$TMP/r.yaml"
"$baton" watch --interval 1 >"$TMP/watch.log" 2>&1 &
track_pid $!
ok "submitted run $run as job $job (2 ranks); baton watch running"

wait_for 120 "attempt 0 to log step 50" attempt_progressed "$run_dir" "$job" 0 50
preempt "$job" 1
ok "preemption 1: job $job requeued"
wait_for 180 "attempt 1 to log 40 steps" attempt_advanced "$run_dir" "$job" 1 40
rank=$((RANDOM % 2))
pid=$(heartbeat_pid "$run_dir" "$rank")
[[ -n $pid ]] || fail "no PID in the heartbeat of rank $rank"
kill -STOP "$pid" || fail "kill -STOP $pid"
ok "SIGSTOP to rank $rank (pid $pid), picked at random"
wait_for 120 "the in-job restart after the hang to log 40 steps" attempt_advanced "$run_dir" "$job" 1.1 40
preempt "$job" 2
ok "preemption 2: job $job requeued"
wait_for 180 "attempt 2 to log 40 steps" attempt_advanced "$run_dir" "$job" 2 40
preempt "$job" 3
ok "preemption 3: job $job requeued"
wait_for 300 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
attempts=$("$baton" attempts "$run" --json)
[[ $(jq -c '[.[] | .end_reason]' <<<"$attempts") == '["preempted","hang","preempted","preempted","completed"]' ]] ||
  fail "attempts: $(jq -c '[.[] | [.job_id, .restart_count, .in_job_seq, .end_reason, .resume_mode]]' <<<"$attempts")"
[[ $(jq -r '[.[1:][] | .resume_mode] | unique | join(",")' <<<"$attempts") == exact ]] ||
  fail "not every resume was exact: $(jq -c '[.[] | .resume_mode]' <<<"$attempts")"
ok "attempts: preempted, hang (rank $rank), preempted, preempted, completed; every resume exact"

nodes_json=$("$baton" nodes --json)  # reads every incident file and log into the ledger first
host=$(jq -r '.[0].host // empty' <<<"$nodes_json")
[[ $(jq length <<<"$nodes_json") == 1 && -n $host ]] || fail "the ledger should hold one node: $nodes_json"
# The incident names the node; its rank is the first stale one the launcher saw (the other rank,
# blocked in the collective, goes stale too), not necessarily the stopped one.
[[ $(jq -c '[.[0].incidents[] | .kind]' <<<"$nodes_json") == '["hang"]' ]] ||
  fail "the ledger should hold exactly the hang: $nodes_json"
[[ $(jq -r '.[0].status' <<<"$nodes_json") == ok && $(jq '[.[] | select(.excluded)] | length' <<<"$nodes_json") == 0 &&
   $(jq '[.[0].actions[] | select(.action == "exclude")] | length' <<<"$nodes_json") == 0 ]] ||
  fail "a node was excluded: $nodes_json"
exc=$(job_field "$job" ExcNodeList)
[[ -z $exc || $exc == "(null)" ]] || fail "job $job has ExcNodeList=$exc"
! grep -q "ExcNodeList=" "$TMP/watch.log" || fail "baton watch set an ExcNodeList: $(grep ExcNodeList= "$TMP/watch.log")"
ok "ledger: 1 incident (hang: $(jq -r '.[0].incidents[0].evidence' <<<"$nodes_json")) on $host, status ok; nothing excluded, no ExcNodeList"
finish_reference
same_final_state "$TMP/reference/checkpoints/checkpoint_step_$STEPS" "$run_dir/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state bit-identical to an uninterrupted 2-rank run"
done_line
