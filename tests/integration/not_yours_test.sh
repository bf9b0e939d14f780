#!/usr/bin/env bash
# Integration test on the real dev cluster (slurm/dev_cluster.sh up): several users, one database.
# A held job of root's (sbatch --hold, never runs) behind a run in a database that user `nobody`
# may write; the job is then cancelled in SLURM. `baton watch --once` as nobody leaves the run as
# it is and says "run N: skipped job J of user root: not yours"; root's `watch --once` reconciles
# it (CANCELLED). The job's owner comes from scontrol's UserId, as SLURM sees it.
# usage: not_yours_test.sh BATON
# Exit 0 pass; 1 a failed check; 2 the cluster is not up; 77 not root (nobody cannot be used).
source "$(dirname "$0")/lib.sh"
[[ $(id -u) -eq 0 ]] || { echo "not_yours_test: needs root (runs a watch as nobody)"; exit 77; }
require_cluster_up
chmod 0777 "$TMP"
db=$BATON_HOME/baton.db

"$baton" ls --no-sync >/dev/null  # creates and migrates the database
job=$(sbatch --parsable --hold --job-name baton-not-yours-it --output=/dev/null --wrap true)
track_job "$job"
sqlite3 "$db" "INSERT INTO runs (name, status, config, run_dir, target_steps, max_restarts,
  max_failures, job_id, created_at, updated_at, owner) VALUES ('held', 'PENDING', 'run: {}',
  '$TMP/run', 10, 3, 3, '$job', 1, 1, 'root')"
chmod -R a+rwX "$BATON_HOME"
scancel "$job"
wait_for 10 "job $job cancelled" bash -c "[[ \$(scontrol -o show job $job | tr ' ' '\n' | sed -n 's/^JobState=//p') == CANCELLED ]]"

out=$(runuser -u nobody -- env BATON_HOME="$BATON_HOME" "$baton" watch --once)
echo "watch as nobody: $out"
[[ $out == *"run 1: skipped job $job of user root: not yours"* ]] || fail "nobody's watch said: $out"
status=$(sqlite3 "$db" "SELECT status FROM runs WHERE id = 1")
[[ $status == PENDING ]] || fail "nobody's watch moved root's run to $status"
ok "nobody's watch left root's job alone and said so"

out=$("$baton" watch --once)
echo "watch as root: $out"
status=$(sqlite3 "$db" "SELECT status FROM runs WHERE id = 1")
[[ $status == CANCELLED ]] || fail "root's watch left its run $status: $out"
[[ $out != *"not yours"* ]] || fail "root's watch skipped its own job: $out"
ok "root's watch reconciled its run (CANCELLED)"
done_line
