#!/usr/bin/env bash
# Smoke test for the single-node dev cluster (slurm/dev_cluster.sh up must have been run).
#
# Checks:
#   1. the cluster answers and has the partitions debug (default) and urgent;
#   2. a job on debug runs to completion;
#   3. a job on debug that holds every CPU is preempted by a job on urgent: its batch script is
#      told at once (--signal=B:USR1 + SlurmctldParameters=preempt_send_user_signal), does what
#      baton's launcher does (scontrol requeue $SLURM_JOB_ID; exit 75), goes back to PENDING
#      under the same job id, runs again after the urgent job with SLURM_RESTART_COUNT=1, and
#      completes. The 120 s requeue hold is cut with `scontrol update jobid=N StartTime=now`
#      (docs/slurm_dev_cluster.md), so the test takes about 20 s.
# Exit 0 on success; 1 on a failed check; 2 if the cluster is not up, or still busy with other
# jobs after SMOKE_IDLE_WAIT seconds (default 120).
set -euo pipefail
source "$(dirname "$0")/../lib/slurm.sh"

TMP=$(mktemp -d /tmp/baton-smoke.XXXXXX)
chmod 0755 "$TMP"
JOBS=()

cleanup() {
    local j
    for j in "${JOBS[@]}"; do
        scancel "$j" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

now() { date +%s.%N | cut -c1-14; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; } # secs A B -> A-B
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }             # ge A B: A >= B
ok() { printf 'ok    %s\n' "$*"; }
fail() {
    printf 'FAIL  %s\n' "$*" >&2
    local j
    for j in "${JOBS[@]}"; do
        scontrol show job "$j" 2>/dev/null | sed 's/^/      /' >&2 || true
    done
    for f in "$TMP"/*.log "$TMP"/*.out; do
        [[ -e $f ]] || continue
        printf '      --- %s\n' "$f" >&2
        sed 's/^/      /' "$f" >&2
    done
    exit 1
}

# wait_state JOBID STATE TIMEOUT_S: until the job is in STATE (COMPLETED jobs stay visible
# to scontrol for MinJobAge=300 s, which is how this works without accounting).
wait_state() {
    local j=$1 want=$2 timeout=$3 deadline state
    deadline=$((SECONDS + timeout))
    while ((SECONDS < deadline)); do
        state=$(job_field "$j" JobState)
        [[ $state == "$want" ]] && return 0
        sleep 0.2
    done
    fail "job $j not $want within ${timeout}s (state '${state:-gone}')"
}

# ------------------------------------------------------------------ 1. cluster is up
require_cluster_up
parts=$(sinfo -h -o '%P' | tr '\n' ' ')
[[ " $parts " == *" debug* "* && " $parts " == *" urgent "* ]] ||
    { echo "FAIL  expected partitions 'debug*' and 'urgent', sinfo says: $parts" >&2; exit 2; }
CPUS=$(sinfo -h -p debug -o '%c' | head -n1)
# The preemption check takes every CPU and preempts debug jobs: wait for other jobs to finish.
wait_cluster_idle "${SMOKE_IDLE_WAIT:-120}"
ok "cluster up: partitions ${parts% }, ${CPUS} CPUs"

# ------------------------------------------------------------------ 2. a plain job completes
# shellcheck disable=SC2016 # expanded by the job, not here
j=$(sbatch --parsable -p debug -t 1 -J smoke-plain -o "$TMP/plain.out" \
    --wrap 'echo "hello from $SLURM_JOB_ID on $SLURM_JOB_PARTITION"')
JOBS+=("$j")
wait_state "$j" COMPLETED 30
grep -q "hello from $j on debug" "$TMP/plain.out" || fail "job $j output wrong: $(cat "$TMP/plain.out")"
ok "job $j ran to completion on debug"

# ------------------------------------------------------------------ 3. preemption + requeue
cat >"$TMP/victim.sh" <<'EOF'
#!/bin/bash
# First run: wait to be preempted; on USR1 requeue itself and exit 75 like baton's launcher.
# Later runs: finish at once.
log="$SMOKE_DIR/victim.log"
restart=${SLURM_RESTART_COUNT:-0}
echo "start $(date +%s.%N | cut -c1-14) restart=$restart job=$SLURM_JOB_ID" >>"$log"
if ((restart > 0)); then
    echo "done $(date +%s.%N | cut -c1-14) restart=$restart" >>"$log"
    exit 0
fi
on_usr1() {
    echo "usr1 $(date +%s.%N | cut -c1-14) restart=$restart" >>"$log"
    scontrol requeue "$SLURM_JOB_ID" >>"$log" 2>&1
    exit 75
}
trap on_usr1 USR1
for ((i = 0; i < 600; i++)); do sleep 0.2 & wait $!; done
echo "never preempted" >>"$log"
exit 1
EOF
chmod +x "$TMP/victim.sh"

v=$(sbatch --parsable -p debug -c "$CPUS" -t 5 -J smoke-victim --requeue --open-mode=append \
    --signal=B:USR1@60 --export=ALL,SMOKE_DIR="$TMP" -o "$TMP/victim.out" "$TMP/victim.sh")
JOBS+=("$v")
wait_state "$v" RUNNING 30
for ((i = 0; i < 50; i++)); do # the script has set its trap once it logged "start"
    grep -q '^start' "$TMP/victim.log" 2>/dev/null && break
    sleep 0.2
done
grep -q '^start .* restart=0' "$TMP/victim.log" || fail "victim $v did not start its first run"
ok "victim $v running on debug with all ${CPUS} CPUs"

t_submit=$(now)
# shellcheck disable=SC2016 # expanded by the job, not here
u=$(sbatch --parsable -p urgent -c "$CPUS" -t 2 -J smoke-urgent -o "$TMP/urgent.out" \
    --wrap 'echo "urgent start $(date +%s.%N | cut -c1-14)"; sleep 5; echo "urgent end $(date +%s.%N | cut -c1-14)"')
JOBS+=("$u")

wait_state "$v" PENDING 60
t_pending=$(now)
grep -q '^usr1 .* restart=0' "$TMP/victim.log" || fail "victim $v was not sent USR1 on preemption"
reason=$(job_field "$v" Reason)
ok "victim $v preempted: USR1, requeued, PENDING (Reason=$reason) $(secs "$t_pending" "$t_submit") s after urgent submit"
[[ $(job_field "$v" Restarts) == 1 ]] || fail "victim $v Restarts=$(job_field "$v" Restarts), want 1"

# Cut the requeue hold (BeginTime = requeue + 121 s on 22.05); the job then waits for the
# urgent job's CPUs (Reason=Resources) and starts when they are free.
scontrol update jobid="$v" StartTime=now
wait_state "$u" COMPLETED 60
ok "urgent job $u completed"
wait_state "$v" COMPLETED 60
ok "victim $v completed after requeue"

# Order and restart count, from the jobs' own logs.
u_end=$(sed -n 's/^urgent end //p' "$TMP/urgent.out")
u_start=$(sed -n 's/^urgent start //p' "$TMP/urgent.out")
usr1=$(sed -n 's/^usr1 \([0-9.]*\) .*/\1/p' "$TMP/victim.log")
second=$(sed -n 's/^start \([0-9.]*\) restart=1 job=.*/\1/p' "$TMP/victim.log")
[[ -n $second ]] || fail "victim $v has no run with SLURM_RESTART_COUNT=1"
grep -q "^start .* restart=1 job=$v\$" "$TMP/victim.log" || fail "second run has another job id"
ge "$u_start" "$usr1" || fail "urgent started ($u_start) before the victim was signalled ($usr1)"
ge "$second" "$u_end" || fail "victim rerun ($second) started before the urgent job ended ($u_end)"
[[ $(job_field "$v" Restarts) == 1 ]] || fail "victim $v Restarts=$(job_field "$v" Restarts), want 1"
ok "same job id $v, SLURM_RESTART_COUNT 0 -> 1, rerun $(secs "$second" "$u_end") s after the urgent job ended"
echo "PASS dev_cluster_smoke"
