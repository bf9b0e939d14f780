#!/usr/bin/env bash
# Integration test on the two-node dev cluster (slurm/dev_cluster.sh up --nodes 2: slurmd
# baton-n1 and baton-n2): a bad node is excluded and the run completes on the good one.
#   - A blocker job holds node A (baton-n1, --exclusive), so a one-node run lands on B.
#   - The preflight fails on B only (BATON_PREFLIGHT_FAIL_NODES, the test hook): each attempt
#     there ends node_unhealthy (exit 76) and is requeued; `baton watch` records the incident,
#     and after the 2nd one B is excluded: the waiting job's `scontrol show job` has
#     ExcNodeList=B before its hold is released.
#   - The blocker goes; the next attempt runs on A only and the run COMPLETES.
#   - The exclusion's TTL (30 s here) passes: `baton nodes` shows B re-admitted on probation.
#   - A two-node run submitted while B is excluded: baton does not exclude ("cannot exclude: job
#     would not fit"), the script has no --exclude; the refusal is a `cannot_exclude` incident of
#     the run, and the lab's email sink subscribed to it (a sendmail script) gets the mail from
#     `baton watch`'s delivery.
# Uses the fake trainer (tests/integration/fake_trainer.sh): no libtorch needed.
# usage: bad_node_test.sh BATON
# Exit 0 pass; 1 a failed check; 2 the two-node cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
eval "$(bash "$SRC/slurm/dev_cluster.sh" env --nodes 2)"
export FAKE_STEP_SLEEP=0.2
unset BATON_NO_PREFLIGHT BATON_NODES_CONFIG
on_fail() { "$baton" nodes --no-sync || true; }

require_idle_cluster
mapfile -t nodes < <(sinfo -h -N -p debug -o '%N' | sort -u)
[[ ${#nodes[@]} == 2 ]] || { echo "FAIL  the debug partition of $SLURM_CONF has no 2 nodes" >&2; exit 2; }
A=${nodes[0]} B=${nodes[1]}
ok "two nodes: A=$A, B=$B"
mkdir -p "$TMP/data" "$BATON_HOME"
# Two nodes: the default cap (10 %) excludes none; half of them may go. The TTL is short so the
# test sees the re-admission.
printf 'max_excluded_fraction: 0.5\nttl: 30s\n' >"$BATON_HOME/nodes.yaml"
# The lab's sink for the cap's refusals: a sendmail that keeps each mail.
printf '#!/bin/sh\ncat >>"%s"\n' "$TMP/mail.txt" >"$TMP/sendmail"
chmod +x "$TMP/sendmail"
printf 'sinks:\n  - {name: admins, type: email, to: admins@example.org, sendmail: %s}\nsubscribe: [cannot_exclude]\n' \
    "$TMP/sendmail" >"$BATON_HOME/alerts.yaml"

blocker=$(sbatch --parsable -p debug -w "$A" --exclusive -t 5 -J it-blocker -o /dev/null --wrap 'sleep 280')
track_job "$blocker"
wait_for 30 "the blocker to hold $A" bash -c "[[ \$(scontrol -o show job $blocker | grep -o 'JobState=[A-Z]*') == JobState=RUNNING ]]"
ok "blocker job $blocker holds $A"

cat >"$TMP/one.yaml" <<YAML
run: {name: it-bad-node, steps: 20, seed: 0}
data: {path: data}
slurm: {partition: debug, nodes: 1, time: "5:00", max_restarts: 10, max_failures: 0}
checkpoint: {every: 5}
YAML
BATON_PREFLIGHT_FAIL_NODES=$B submit "$TMP/one.yaml"
"$baton" watch --interval 1 >"$TMP/watch.log" 2>&1 &
track_pid $!
ok "submitted run $run as job $job (the preflight fails on $B); baton watch running"

excluded() { [[ $(job_field "$job" ExcNodeList) == "$B" ]]; }
wait_for 150 "job $job to get ExcNodeList=$B" excluded
ok "job $job: ExcNodeList=$B ($(grep -c "incident preflight" "$TMP/watch.log") preflight incidents logged)"
nodes_json=$("$baton" nodes --json --no-sync)
[[ $(jq -r --arg b "$B" '.[] | select(.host == $b) | .status' <<<"$nodes_json") == excluded ]] ||
    fail "baton nodes does not show $B excluded: $nodes_json"
n=$(jq --arg b "$B" '[.[] | select(.host == $b) | .incidents[] | select(.kind == "preflight")] | length' <<<"$nodes_json")
((n == 2)) || fail "$B has $n preflight incidents, want 2: $nodes_json"
[[ $(jq --arg a "$A" '[.[] | select(.host == $a)] | length' <<<"$nodes_json") == 0 ]] ||
    fail "$A is in the ledger: $nodes_json"
attempts=$("$baton" attempts "$run" --no-sync --json)
[[ $(jq -r '[.[0].end_reason, .[1].end_reason, .[0].nodes, .[1].nodes] | join(" ")' <<<"$attempts") == "node_unhealthy node_unhealthy $B $B" ]] ||
    fail "attempts 0 and 1: $attempts"
ok "$B excluded after 2 incidents; attempts 0 and 1 ended node_unhealthy on $B (exit 76)"
grep -q "run $run: job $job: ExcNodeList=$B before the requeue hold ends" "$TMP/watch.log" ||
    fail "baton watch did not log the ExcNodeList update"

scancel "$blocker"
completed() { [[ $("$baton" show "$run" --no-sync --json | jq -r .status) == COMPLETED ]]; }
wait_for 120 "run $run to complete" completed
attempts=$("$baton" attempts "$run" --no-sync --json)
[[ $(jq -r '.[-1].nodes' <<<"$attempts") == "$A" && $(jq -r '.[-1].end_reason' <<<"$attempts") == completed ]] ||
    fail "the last attempt: $(jq -c '.[-1]' <<<"$attempts")"
ok "run $run COMPLETED on $A ($(jq length <<<"$attempts") attempts)"

readmitted() {
    [[ $("$baton" nodes --json | jq -r --arg b "$B" '.[] | select(.host == $b) | .status') == probation ]]
}
wait_for 60 "$B to be re-admitted after its 30 s TTL" readmitted
"$baton" nodes | grep -q "$B.*probation" || fail "the table does not show $B on probation"
ok "$B re-admitted on probation after its TTL"

# A two-node job while B is excluded (by hand now): it would not fit, so nothing is excluded.
"$baton" nodes exclude "$B" --for 10m --partition debug --reason "it test" >/dev/null
sed -e 's/it-bad-node/it-two/' -e 's/nodes: 1/nodes: 2/' "$TMP/one.yaml" >"$TMP/two.yaml"
out=$("$baton" submit "$TMP/two.yaml" --json 2>"$TMP/submit2.err") || fail "submit: $(cat "$TMP/submit2.err")"
track_job "$(jq -r .job_id <<<"$out")"
grep -q "cannot exclude: job would not fit" "$TMP/submit2.err" || fail "no refusal: $(cat "$TMP/submit2.err")"
! grep -q -- "--exclude" "$(jq -r .run_dir <<<"$out")/sbatch.sh" || fail "the 2-node script excludes a node"
ok "a 2-node job is not given --exclude=$B: \"$(grep -o 'cannot exclude.*' "$TMP/submit2.err" | head -1)\""
run2=$(jq -r .run_id <<<"$out")
inc=$("$baton" incidents "$run2" --json)
[[ $(jq -r '[.[] | select(.kind == "cannot_exclude")] | length' <<<"$inc") == 1 &&
   $(jq -r '.[0].node' <<<"$inc") == "$B" ]] || fail "no cannot_exclude incident for run $run2: $inc"
mailed() { grep -q "cannot_exclude" "$TMP/mail.txt" 2>/dev/null; }
wait_for 30 "the cannot_exclude alert to reach the email sink" mailed
grep -q "node $B: cannot exclude: job would not fit" "$TMP/mail.txt" || fail "the mail: $(cat "$TMP/mail.txt")"
ok "the refusal is incident cannot_exclude of run $run2, mailed to the lab's sink: \"$(grep -m1 '^Subject:' "$TMP/mail.txt")\""
"$baton" cancel "$run2" >/dev/null
done_line
