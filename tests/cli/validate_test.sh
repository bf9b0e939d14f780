#!/usr/bin/env bash
# `baton validate`: good configs pass, bad ones exit 78 naming file, line, key and value.
# usage: validate_test.sh BATON SOURCE_DIR
source "$(dirname "$0")/lib.sh"
baton=$1
src=$2

mkdir -p "$tmp/data" "$tmp/out/demo-data" "$tmp/configs"
cp "$src/configs/example.yaml" "$tmp/configs/example.yaml"
expect_exit 0 "$baton" validate "$tmp/configs/example.yaml"
expect_exit 0 "$baton" validate --print "$tmp/configs/example.yaml"
expect_in "$out" "path: $tmp/out/demo-data"

cfg=$tmp/bad.yaml
printf 'run: {steps: 10}\ndata:\n  path: data\n  pad_multiple: 0\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "$cfg:4:17: data.pad_multiple: value 0 is out of range"

printf 'run: {steps: 10}\ndata: {path: data}\noptim: {lr: -1e-3, grad_accum: 0}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "optim.lr: value -1e-3 is out of range (must be > 0.0)"
expect_in "$err" "optim.grad_accum: value 0 is out of range"

printf 'run: {steps: 10}\ndata: {path: data, batch_size: 0, colour: red}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "data.batch_size: value 0 is out of range"
expect_in "$err" "data.colour: unknown key"

printf 'run: {steps: 10}\ndata: {path: missing-folder}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "data.path: no such dataset folder '$tmp/missing-folder'"

printf 'run: {steps: 10\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "malformed YAML"

expect_exit 78 "$baton" validate "$tmp/nope.yaml"
expect_in "$err" "nope.yaml: cannot read"
expect_exit 64 "$baton" validate
expect_exit 64 "$baton" frobnicate
echo "$checks passed, 0 failed"
