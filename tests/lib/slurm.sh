# Helpers for the test scripts that talk to SLURM: the dev cluster (slurm/dev_cluster.sh up) or
# a controller that is down. Sourced, never run; defines functions only and changes no setting of
# the script that sources it. wait_for calls `fail MESSAGE`, which every sourcing script defines
# (it prints what that script can tell about the failure and exits 1).
# shellcheck shell=bash

# job_field JOBID FIELD: the value of FIELD=... in `scontrol show job` ('' if the job is gone).
job_field() { scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }

# wait_for TIMEOUT_S DESCRIPTION COMMAND...: polls COMMAND every 0.3 s until it succeeds; on
# timeout, fail "timed out after TIMEOUT_S s waiting for: DESCRIPTION".
wait_for() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out after ${timeout}s waiting for: $what"
    sleep 0.3
  done
}

# require_cluster_up: exits 2 (the test cannot run, which is not a failed check) unless slurmctld
# answers.
require_cluster_up() {
  scontrol ping 2>/dev/null | grep -q 'is UP' ||
    { echo "FAIL  slurmctld does not answer; run: bash slurm/dev_cluster.sh up" >&2; exit 2; }
}

# cluster_idle: no job on the cluster is pending, running, suspended or finishing.
cluster_idle() { [[ -z $(squeue -h -t RUNNING,PENDING,COMPLETING,CONFIGURING,SUSPENDED -o '%i') ]]; }

# wait_cluster_idle SECONDS: waits up to SECONDS for every job on the cluster to finish (the
# preemption tests need every CPU); exits 2 with the queue printed if some are still there.
wait_cluster_idle() {
  local i
  for ((i = 0; i < $1; i++)); do
    cluster_idle && return 0
    sleep 1
  done
  cluster_idle && return 0
  echo "FAIL  the cluster is busy (squeue); this test needs it idle" >&2
  squeue >&2
  exit 2
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on at the moment of the call.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# write_down_slurm_conf FILE: a slurm.conf whose controller nobody listens on (a closed port on
# this host), so that every SLURM command run with SLURM_CONF=FILE fails fast as with a
# controller that is down. No SLURM daemon is needed.
write_down_slurm_conf() {
  cat >"$1" <<CONF
ClusterName=baton-down
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
AuthType=auth/none
CredType=cred/none
MessageTimeout=2
NodeName=localhost CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES State=UP
CONF
}
