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

# What YAML lets through silently: a repeated key or section (both places named), a second
# document, a number tagged !!str.
printf 'run: {steps: 10}\ndata: {path: data}\nrun:\n  steps: 20\n  steps: 30\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "$cfg:3:1: run: repeated section, first given at $cfg:1:1"
expect_in "$err" "$cfg:5:3: run.steps: repeated key, first given at $cfg:4:3"
printf 'run: {steps: 10}\ndata: {path: data}\n---\nrun: {steps: 20}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "$cfg:3:1: a second YAML document starts here"
printf 'run: {steps: !!str 10}\ndata: {path: data}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "run.steps: expected an integer, got '10' (quoted or tagged !!str, so a string"

# Floats the trainer cannot hold (float32), and non-finite ones.
printf 'run: {steps: 10}\ndata: {path: data}\noptim: {lr: 1e39, eps: .nan}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "$cfg:3:13: optim.lr: value 1e39 is out of range (must be finite and within float32's range"
expect_in "$err" "optim.eps: expected a finite number, got '.nan'"

# train.device: cuda is the trainer's to refuse (it knows how it was built); validate accepts it.
printf 'run: {steps: 10}\ndata: {path: data}\ntrain: {device: cuda}\n' >"$cfg"
expect_exit 0 "$baton" validate "$cfg"

# A batch larger than the dataset (its index counted, blank lines left out).
mkdir -p "$tmp/small/meta"
printf '{"id": 1}\n\n{"id": 2}\n' >"$tmp/small/meta/episodes.jsonl"
printf 'run: {steps: 10}\ndata: {path: small, batch_size: 3}\n' >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "$cfg:2:33: data.batch_size: value 3 exceeds the dataset's 2 episodes ($tmp/small/meta/episodes.jsonl)"
printf 'run: {steps: 10}\ndata: {path: small, batch_size: 2}\n' >"$cfg"
expect_exit 0 "$baton" validate "$cfg"

# At most 20 problems are listed, then a count.
{
  printf 'run: {steps: 10}\ndata: {path: data}\noptim:\n'
  for i in $(seq 1 30); do printf '  junk_%d: 1\n' "$i"; done
} >"$cfg"
expect_exit 78 "$baton" validate "$cfg"
expect_in "$err" "optim.junk_20: unknown key"
expect_in "$err" "... and 10 more"
case "$err" in *junk_21*) fail "error 21 should be counted, not listed: $err" ;; esac
[ "$(printf '%s\n' "$err" | wc -l)" -eq 21 ] || fail "expected 21 lines: $err"
checks=$((checks + 1))

# Not a regular file, or far too large: refused at once, naming the file (timeout: never block).
expect_exit 78 timeout 20 "$baton" validate "$tmp/configs"
expect_in "$err" "$tmp/configs: cannot read the config file: it is a folder, not a regular file"
mkfifo "$tmp/fifo.yaml"
expect_exit 78 timeout 20 "$baton" validate "$tmp/fifo.yaml"
expect_in "$err" "$tmp/fifo.yaml: cannot read the config file: it is a FIFO, not a regular file"
expect_exit 78 timeout 20 "$baton" validate /dev/zero
expect_in "$err" "/dev/zero: cannot read the config file: it is a character device"
{ cat "$src/configs/example.yaml"; head -c 1100000 /dev/zero | tr '\0' '#'; } >"$tmp/huge.yaml"
expect_exit 78 timeout 20 "$baton" validate "$tmp/huge.yaml"
expect_in "$err" "$tmp/huge.yaml: the config file is"
expect_in "$err" "more than a run config's limit of 1048576 bytes"
expect_exit 64 "$baton" validate
expect_exit 64 "$baton" frobnicate
echo "$checks passed, 0 failed"
