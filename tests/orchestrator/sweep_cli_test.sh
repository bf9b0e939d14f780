#!/usr/bin/env bash
# `baton sweep` from the command line without SLURM (PATH without sbatch/scontrol): the dry run
# lists the members and the array; bad specs give 78 or 64 naming the key, the member and its
# values, and create nothing (no database, no run folder, no sweep folder); the read commands
# answer on an empty store; unknown sweeps are 66.
# usage: sweep_cli_test.sh BATON
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
export BATON_HOME=$tmp/home
sweep() { env PATH= "$baton" sweep "$@"; }
nothing_created() {
  [ ! -e "$BATON_HOME" ] || fail "a refused sweep created $(find "$BATON_HOME" | head -5)"
  checks=$((checks + 1))
}

mkdir -p "$tmp/data"
printf 'run: {name: b, steps: 5}\ndata: {path: data}\nslurm: {cpus_per_task: 1}\n' >"$tmp/base.yaml"
spec() { printf 'base: base.yaml\nname: s\nmax_parallel: 3\n%s\n' "$1" >"$tmp/spec.yaml"; }

spec 'grid: {optim.lr: [1.0e-4, 3.0e-4], run.seed: [1, 2]}'
expect_exit 0 sweep "$tmp/spec.yaml" --dry-run --json
[ "$(jq -r .array <<<"$out")" = "0-3%3" ] || fail "array: $out"
[ "$(jq -r '.members | length' <<<"$out")" = 4 ] || fail "members: $out"
[ "$(jq -r '.members[3].values["run.seed"]' <<<"$out")" = 2 ] || fail "member 3: $out"
[ "$(jq -r '.members[2].name' <<<"$out")" = s-2 ] || fail "member 2: $out"
checks=$((checks + 1))
expect_exit 0 sweep "$tmp/spec.yaml" --dry-run --name other
expect_in "$out" "sweep other: 4 members, sbatch --array=0-3%3"
nothing_created

spec 'grid: {optim.lrr: [1.0e-4]}'
expect_exit 78 sweep "$tmp/spec.yaml"
expect_in "$err" "optim.lrr"
expect_in "$err" "member 0"
nothing_created

spec 'grid: {optim.lr: [1.0e-4, -1.0]}'
expect_exit 78 sweep "$tmp/spec.yaml"
expect_in "$err" "member 1 (optim.lr=-1.0)"
nothing_created

spec 'grid: {run.seed: []}'
expect_exit 64 sweep "$tmp/spec.yaml"
expect_in "$err" "grid.run.seed: the axis is empty"
nothing_created

spec 'grid: {run.seed: [3, 4, 3]}'
expect_exit 78 sweep "$tmp/spec.yaml"
expect_in "$err" "members 0 and 2 have identical configs"
nothing_created

spec 'zip: {run.seed: [1, 2], optim.lr: [1.0e-4]}'
expect_exit 78 sweep "$tmp/spec.yaml"
expect_in "$err" "zip.optim.lr"
nothing_created

expect_exit 64 sweep
expect_exit 66 sweep "$tmp/nope.yaml"
nothing_created

expect_exit 0 "$baton" sweeps --json
[ "$(tr -d ' \n' <<<"$out")" = "[]" ] || fail "sweeps on an empty store: $out"
expect_exit 66 "$baton" sweep show 42 --json
expect_in "$err" "no sweep '42'"
expect_exit 66 "$baton" sweep cancel nope
echo "$checks passed, 0 failed"
