#!/usr/bin/env bash
# A bad node found by its crashes, on the two-node dev cluster (slurm/dev_cluster.sh up --nodes 2:
# slurmd baton-n1 = A and baton-n2 = B), with the real trainer (docs/nodes.md):
#   - The trainer wrapper (BATON_TRAIN_BIN, written here) kills its rank with SIGBUS once it has
#     trained 25 steps (past a checkpoint), only on node B; on A (and outside SLURM) it is the trainer.
#   - A blocker job holds A, so the one-node run lands on B: attempt 0 dies by SIGBUS, srun names
#     B in the job log ("srun: error: B: task 0: Bus error"), the job is requeued (a crash,
#     slurm.in_job_restarts 0) and `baton watch` records the 1st incident. Not excluded yet.
#   - Its hold is cut; attempt 1 lands on B again and dies the same way: the 2nd incident. B is
#     excluded, and the waiting job's `scontrol show job` has ExcNodeList=B before the hold ends.
#   - The blocker goes, the hold is cut: attempt 2 runs on A only, resumes exact and COMPLETES;
#     its final weights and AdamW state equal, bit for bit, an uninterrupted run of the config.
# usage: bad_node_sigbus_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the two-node cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
STEPS=${BATON_IT_STEPS:-120}
eval "$(bash "$(dirname "$0")/../../slurm/dev_cluster.sh" env --nodes 2)"
require_idle_cluster
mapfile -t nodes < <(sinfo -h -N -p debug -o '%N' | sort -u)
[[ ${#nodes[@]} == 2 ]] || { echo "FAIL  the debug partition of $SLURM_CONF has no 2 nodes" >&2; exit 2; }
A=${nodes[0]} B=${nodes[1]}
mkdir -p "$BATON_HOME"
# Two nodes: the default cap (10 %) excludes none; half of them may go.
printf 'max_excluded_fraction: 0.5\n' >"$BATON_HOME/nodes.yaml"
unset BATON_NODES_CONFIG BATON_NO_PREFLIGHT

# The wrapper: on B, the trainer runs as a child until its events show 25 steps past its start
# (a checkpoint every 20 lies behind it), then dies by SIGBUS and the wrapper re-raises it, so
# srun sees its task killed by the signal.
cat >"$TMP/train_wrapper.sh" <<SH
#!/usr/bin/env bash
[[ \${SLURMD_NODENAME:-} == "$B" && \${1:-} == train ]] || exec "$bt" "\$@"
events=""
for ((i = 1; i < \$#; i++)); do [[ \${!i} == --events ]] && { j=\$((i + 1)); events=\${!j}; }; done
ulimit -c 0
"$bt" "\$@" &
child=\$!
start=""
while kill -0 "\$child" 2>/dev/null; do
  last=\$(grep -h '"type":"step"' "\$events" 2>/dev/null | tail -n1 | jq -r .step 2>/dev/null)
  [[ -z \$start && -n \$last ]] && start=\$last
  if [[ -n \$start && -n \$last ]] && ((last >= start + 25)); then
    echo "train_wrapper: SIGBUS to the trainer (pid \$child) at step \$last on \$SLURMD_NODENAME" >&2
    kill -BUS "\$child"
    wait "\$child"
    trap - BUS
    kill -BUS \$\$
  fi
  sleep 0.2
done
wait "\$child"
SH
chmod +x "$TMP/train_wrapper.sh"
export BATON_TRAIN_BIN=$TMP/train_wrapper.sh
make_dataset "$TMP/ds"
write_config "$TMP/r.yaml" it-sigbus "$STEPS" "checkpoint: {every: 20, keep_last: 20}" \
  "slurm: {partition: debug, nodes: 1, ntasks_per_node: 1, cpus_per_task: 1, time: \"10:00\", in_job_restarts: 0, max_failures: 3}"
start_reference "$TMP/r.yaml" "$TMP/reference" 1 1

blocker=$(sbatch --parsable -p debug -w "$A" --exclusive -t 8 -J it-blocker -o /dev/null --wrap 'sleep 470')
track_job "$blocker"
wait_for 30 "the blocker to hold $A" bash -c "[[ \$(scontrol -o show job $blocker | grep -o 'JobState=[A-Z]*') == JobState=RUNNING ]]"
ok "two-node cluster: A=$A (held by blocker job $blocker), B=$B"

submit "$TMP/r.yaml"
"$baton" watch --interval 1 >"$TMP/watch.log" 2>&1 &
track_pid $!
ok "submitted run $run as job $job; baton watch running"

incidents_on_b() {
  "$baton" nodes --json --no-sync 2>/dev/null |
    jq --arg b "$B" '[.[] | select(.host == $b) | .incidents[] | select(.kind == "signal")] | length'
}
has_incidents() { [[ $(incidents_on_b) -ge $1 ]]; }
held() { [[ $(job_field "$job" JobState) == PENDING && $(job_field "$job" Reason) == BeginTime ]]; }
b_status() { "$baton" nodes --json --no-sync 2>/dev/null | jq -r --arg b "$B" '.[] | select(.host == $b) | .status'; }

wait_for 180 "attempt 0 to die on $B and its incident to be recorded" has_incidents 1
wait_for 30 "job $job to wait on its requeue hold" held
[[ $(b_status) == ok && -z $(job_field "$job" ExcNodeList | sed 's/(null)//') ]] ||
  fail "one incident already excluded $B: $(b_status), ExcNodeList=$(job_field "$job" ExcNodeList)"
grep -q "srun: error: $B: task 0: Bus error" "$run_dir/logs/$job.out" || fail "srun did not name $B in the job log"
ok "attempt 0 killed by SIGBUS on $B: 1 incident (srun's line), $B not excluded, job held"
release_held "$job"

wait_for 180 "attempt 1 to die on $B and the 2nd incident to be recorded" has_incidents 2
excluded() { held && [[ $(job_field "$job" ExcNodeList) == "$B" ]]; }
wait_for 30 "job $job to get ExcNodeList=$B while its hold stands" excluded
[[ $(b_status) == excluded ]] || fail "$B is $(b_status) after 2 incidents"
grep -q "run $run: job $job: ExcNodeList=$B before the requeue hold ends" "$TMP/watch.log" ||
  fail "baton watch did not log the ExcNodeList update"
ok "after the 2nd incident: $B excluded, scontrol show job $job: ExcNodeList=$B, JobState=PENDING (hold)"

scancel "$blocker"
release_held "$job"
wait_for 300 "run $run to end" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
attempts=$("$baton" attempts "$run" --json)
a() { jq -r ".[$1].$2" <<<"$attempts"; }
[[ $(jq length <<<"$attempts") == 3 ]] || fail "expected 3 attempts: $(jq -c '[.[] | [.nodes, .end_reason]]' <<<"$attempts")"
[[ $(a 0 nodes) == "$B" && $(a 1 nodes) == "$B" && $(a 0 end_reason) == crashed && $(a 1 end_reason) == crashed ]] ||
  fail "attempts 0 and 1: $(jq -c '[.[] | [.nodes, .end_reason]]' <<<"$attempts")"
[[ $(a 2 nodes) == "$A" && $(a 2 end_reason) == completed && $(a 2 last_step) == "$STEPS" ]] ||
  fail "attempt 2: $(jq -c '.[2]' <<<"$attempts")"
[[ $(a 1 resume_mode) == exact && $(a 2 resume_mode) == exact && $(a 2 step0) -ge 20 && $(($(a 2 step0) % 20)) == 0 ]] ||
  fail "resumes: attempt 1 $(a 1 resume_mode) from $(a 1 step0), attempt 2 $(a 2 resume_mode) from $(a 2 step0)"
ok "attempts: 0..$(a 0 last_step) on $B (SIGBUS) | $(a 1 step0)..$(a 1 last_step) on $B (SIGBUS) | $(a 2 step0)..$STEPS exact on $A only (completed)"
finish_reference
same_final_state "$TMP/reference/checkpoints/checkpoint_step_$STEPS" "$run_dir/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state bit-identical to an uninterrupted run"
done_line
