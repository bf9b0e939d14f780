#!/usr/bin/env bash
# `baton` error paths users hit: unknown run (66), malformed YAML (78), a missing sbatch (69),
# a SLURM controller that is down (69), `baton launch` on a path that is not a run folder (66)
# — each with a clear message and nothing half-written (no run row, no run folder, no events/). Needs no running SLURM: the "down" controller is a slurm.conf
# pointing at a port nobody listens on.
# usage: cli_errors_test.sh BATON SOURCE_DIR
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/../lib/slurm.sh"
baton=$1
export BATON_HOME=$tmp/home
export BATON_SLURM_TIMEOUT_S=30

no_runs() { # nothing in the database, no run folders
  expect_exit 0 "$baton" ls --json --no-sync
  [ "$(printf '%s' "$out" | tr -d ' \n')" = "[]" ] || fail "runs were recorded: $out"
  [ -z "$(ls -A "$BATON_HOME/runs" 2>/dev/null)" ] || fail "run folders left: $(ls "$BATON_HOME/runs")"
  checks=$((checks + 1))
}

mkdir -p "$tmp/data"
printf 'run: {name: e, steps: 5}\ndata: {path: data}\n' >"$tmp/ok.yaml"

# Malformed YAML and invalid values: exit 78, nothing written (not even the database).
printf 'run: {steps: 10\n' >"$tmp/bad.yaml"
expect_exit 78 "$baton" submit "$tmp/bad.yaml"
expect_in "$err" "malformed YAML"
[ ! -e "$BATON_HOME/baton.db" ] || fail "a config error created the database"
printf 'run: {steps: 0}\ndata: {path: data}\n' >"$tmp/zero.yaml"
expect_exit 78 "$baton" submit "$tmp/zero.yaml"
expect_in "$err" "run.steps"
expect_exit 64 "$baton" submit
expect_exit 64 "$baton" submit "$tmp/ok.yaml" --name 123
no_runs

# Unknown run, by id and by name.
for cmd in show attempts checkpoints cancel; do
  expect_exit 66 "$baton" "$cmd" 4242
  expect_in "$err" "no run with id or name '4242'"
done
expect_exit 66 "$baton" show no-such-run --json
expect_in "$err" "no-such-run"

# A missing sbatch.
expect_exit 69 env PATH= "$baton" submit "$tmp/ok.yaml"
expect_in "$err" "'sbatch' not found in PATH"
no_runs

# A controller that is down (its port is closed).
write_down_slurm_conf "$tmp/down.conf"
expect_exit 69 env SLURM_CONF="$tmp/down.conf" "$baton" submit "$tmp/ok.yaml"
expect_in "$err" "SLURM controller is not reachable"
no_runs

# `baton launch` on a mistyped path, a folder without run.yaml, or a file: 66 naming what is
# missing, and nothing is created (not the folder, not events/ inside it).
expect_exit 66 "$baton" launch "$tmp/no/such/run"
expect_in "$err" "no run folder '$tmp/no/such/run'"
[ ! -e "$tmp/no" ] || fail "launch created $tmp/no"
expect_exit 66 env -C "$tmp" "$baton" launch tpyo-run
expect_in "$err" "no run folder '$tmp/tpyo-run'"
[ ! -e "$tmp/tpyo-run" ] || fail "launch created $tmp/tpyo-run"
expect_exit 66 "$baton" launch "$BATON_HOME/runs/1-tpyo"
expect_in "$err" "$BATON_HOME/runs/1-tpyo"
no_runs
mkdir "$tmp/not-a-run"
expect_exit 66 "$baton" launch "$tmp/not-a-run"
expect_in "$err" "'$tmp/not-a-run' is not a run folder: $tmp/not-a-run/run.yaml does not exist"
[ -z "$(ls -A "$tmp/not-a-run")" ] || fail "launch wrote into $tmp/not-a-run: $(ls -A "$tmp/not-a-run")"
ln -s "$tmp/nowhere.yaml" "$tmp/not-a-run/run.yaml"  # a dangling link is no run.yaml either
expect_exit 66 "$baton" launch "$tmp/not-a-run"
expect_in "$err" "run.yaml does not exist"
[ "$(ls -A "$tmp/not-a-run")" = run.yaml ] || fail "launch wrote into $tmp/not-a-run"
printf 'x' >"$tmp/a-file"
expect_exit 66 "$baton" launch "$tmp/a-file"
expect_in "$err" "'$tmp/a-file' is not a run folder: not a directory"
[ "$(cat "$tmp/a-file")" = x ] || fail "launch changed $tmp/a-file"
expect_exit 64 "$baton" launch

# --dry-run needs no SLURM and writes nothing.
expect_exit 0 env PATH= "$baton" submit "$tmp/ok.yaml" --dry-run
expect_in "$out" "#SBATCH --requeue"
expect_in "$out" "launch"
no_runs
echo "$checks passed, 0 failed"
