#!/usr/bin/env bash
# Issue 5, "must show" 4, against the real dev cluster and a database that already holds a run:
# malformed YAML, a partition sbatch rejects, an unknown run id, a missing sbatch and a SLURM
# controller that is down each give a clear message and a non-zero exit, and leave the database
# and the runs folder exactly as they were (tests/orchestrator/cli_errors_test.sh checks the same
# on an empty database without SLURM). A `baton cancel` that cannot reach SLURM marks nothing.
# usage: bad_input_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
export BATON_SLURM_TIMEOUT_S=20

require_idle_cluster
make_dataset "$TMP/ds"
# A blocker holds every CPU, so the run below stays PENDING (an active run to cancel).
blocker=$(sbatch --parsable -p debug -c "$CPUS" -t 5 -J baton-it-blocker -o /dev/null --wrap 'sleep 300')
track_job "$blocker"
write_config "$TMP/ok.yaml" it-bad-input 10 "slurm: {partition: debug, cpus_per_task: 1, time: \"5:00\"}"
submit "$TMP/ok.yaml"
ok "run $run submitted as job $job (pending behind blocker $blocker)"

db=$BATON_HOME/baton.db
snapshot() { # every row of every table but the ingest cursors, and the runs folder listing
  local t
  for t in $(sqlite3 "$db" "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name"); do
    echo "== $t"
    sqlite3 "$db" "select * from $t"
  done
  find "$BATON_HOME/runs" | sort
}
snapshot >"$TMP/before"
unchanged() {
  snapshot >"$TMP/after"
  diff "$TMP/before" "$TMP/after" >"$TMP/snap.diff" || fail "$1 changed the database or runs folder: $(head -n 8 "$TMP/snap.diff")"
}

# expect CODE TEXT CMD...: CMD exits CODE and its stderr contains TEXT.
expect() {
  local want=$1 text=$2 rc=0
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
  ((rc == want)) || fail "'$*' exited $rc, want $want; stderr: $(cat "$TMP/err")"
  grep -qF -- "$text" "$TMP/err" || fail "'$*': stderr lacks '$text': $(cat "$TMP/err")"
  ok "exit $want, '$(head -n 1 "$TMP/err" | cut -c1-110)' from: ${*/#$baton/baton}"
}

printf 'run: {name: broken, steps: 10\ndata: {path: ds}\n' >"$TMP/malformed.yaml"
expect 78 "malformed YAML" "$baton" submit "$TMP/malformed.yaml"
write_config "$TMP/nopart.yaml" it-nopart 10 "slurm: {partition: no_such_partition, time: \"5:00\"}"
expect 78 "no_such_partition" "$baton" submit "$TMP/nopart.yaml"
unchanged "a rejected submit"
for cmd in show attempts checkpoints cancel; do
  expect 66 "no run with id or name '4242'" "$baton" "$cmd" 4242
done
expect 66 "no-such-run" "$baton" show no-such-run --json
expect 69 "'sbatch' not found in PATH" env PATH=/nonexistent "$baton" submit "$TMP/ok.yaml"
unchanged "unknown runs and a missing sbatch"

# A controller that is down: a slurm.conf whose controller port nobody listens on.
write_down_slurm_conf "$TMP/down.conf"
down=(env SLURM_CONF="$TMP/down.conf")
expect 69 "SLURM controller is not reachable" "${down[@]}" "$baton" submit "$TMP/ok.yaml"
expect 69 "" "${down[@]}" "$baton" cancel "$run"
[[ $("$baton" show "$run" --json --no-sync | jq -r .status) != CANCELLED ]] || fail "cancel marked the run while SLURM was down"
expect 69 "" "${down[@]}" "$baton" watch --once
rc=0
"${down[@]}" "$baton" show "$run" >"$TMP/out" 2>"$TMP/err" || rc=$?
((rc == 0)) && grep -qi "slurm" "$TMP/err" && grep -q "run $run" "$TMP/out" ||
  fail "show with SLURM down: exit $rc, stderr '$(cat "$TMP/err")' (want 0, a warning, and the run)"
ok "show with SLURM down warns ('$(head -n 1 "$TMP/err" | cut -c1-100)') and shows what is ingested"
[[ $(job_field "$job" JobState) == PENDING ]] || fail "job $job is $(job_field "$job" JobState), want still PENDING"
# Only the run's status may have been touched by the syncs above; the rest is as it was.
snapshot | grep -v "^$run|" >"$TMP/after.norun"
grep -v "^$run|" "$TMP/before" | diff - "$TMP/after.norun" >&2 || fail "SLURM down changed the database"
[[ -z $(find "$BATON_HOME/runs" -mindepth 1 -maxdepth 1 ! -name "$run-*") ]] || fail "a failed submit left a run folder"
ok "nothing half-written: the database and the runs folder hold only run $run"

# With SLURM back, cancel works: the job goes away, the run is CANCELLED.
expect_ok() { "$@" >"$TMP/out" 2>"$TMP/err" || fail "'$*' failed: $(cat "$TMP/err")"; }
expect_ok "$baton" cancel "$run"
wait_for 30 "job $job to be cancelled" bash -c "[[ \$(scontrol -o show job $job | grep -o 'JobState=[A-Z]*') == JobState=CANCELLED ]]"
[[ $(run_status "$run") == CANCELLED ]] || fail "run $run is $(run_status "$run") after cancel"
ok "baton cancel with SLURM up: job $job CANCELLED, run $run CANCELLED"
scancel "$blocker"
done_line
