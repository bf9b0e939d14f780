#!/usr/bin/env bash
# The storage forecast end to end (docs/eval.md, "Storage forecast"), with real trainer runs on
# the CPU:
#   1. `baton submit --dry-run --json` gives storage {footprint_bytes, free_bytes, fits}, and the
#      footprint is within 5 % of what the run folder holds when a real run of that config ends
#      (checkpoints kept by keep_last / keep_every, events, the trainer's log), and one
#      checkpoint folder as planned is within 1 % of one as written on 1 and 2 ranks;
#   2. a forecast larger than the filesystem is a warning, and with --strict a refusal (exit 74)
#      naming the bytes, for `baton submit` and `baton sweep`;
#   3. on a tmpfs sized for 3 checkpoints, keep_last: 5 ends 74 naming the bytes the next save
#      needs, with no .partial folder and the 3 checkpoints intact; keep_last: 2 on a tmpfs for
#      2.5 checkpoints prunes what retention drops anyway before each save and finishes.
# Part 3 needs `mount -t tmpfs` (root); without it the test says so and exits 77 after 1 and 2.
# usage: storage_forecast_test.sh BATON BATON_TRAIN
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
export BATON_TRAIN_BIN=$(realpath "$2")
bt=$BATON_TRAIN_BIN
export BATON_HOME=$tmp/home
export BATON_SLURM_TIMEOUT_S=10
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

"$bt" synth-data --out "$tmp/ds" --episodes 6 --seed 7 --frames 4:6 --height 4 --width 4 \
  --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null

# config FILE RUN_DIR STEPS EVERY KEEP_LAST KEEP_EVERY
config() {
  cat >"$1" <<YAML
run: {name: storage, dir: $2, steps: $3, seed: 11}
slurm: {cpus_per_task: 2, time: "00:05:00"}
data: {path: $tmp/ds, batch_size: 2, pad_multiple: 2}
model: {dim: 32, heads: 2, layers: 2, ffn_dim: 64, freq_dim: 16}
optim: {lr: 1.0e-3, warmup_steps: 2}
checkpoint: {every: $4, keep_last: $5, keep_every: $6, write_gbps: 1}
train: {log_every: 1}
YAML
}

# storage_field JSON KEY: the storage object's KEY of a submit or sweep --dry-run --json.
storage_field() {
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["storage"][sys.argv[2]])' "$1" "$2"
}

# 1. The forecast against a real run's footprint.
run=$tmp/run
config "$tmp/a.yaml" "$run" 12 2 3 4
expect_exit 0 "$baton" submit "$tmp/a.yaml" --dry-run --json
json=$out
python3 - "$json" <<'PY' || fail "storage shape: $json"
import json, sys
s = json.loads(sys.argv[1])["storage"]
assert isinstance(s["footprint_bytes"], int) and s["footprint_bytes"] > 0, s
assert isinstance(s["free_bytes"], int) and s["free_bytes"] > 0, s
assert s["fits"] is True, s
assert s["retained_checkpoints"] == 4, s  # steps 12, 10 and 8 (keep_last 3) and 4 (keep_every)
assert s["checkpoints_bytes"] == 4 * s["checkpoint_bytes"], s
PY
checks=$((checks + 1)); echo "ok: --dry-run --json has storage {footprint_bytes, free_bytes, fits}"
[ ! -e "$run" ] || fail "a dry run created the run folder"
forecast=$(storage_field "$json" footprint_bytes)
mkdir -p "$run/logs"
expect_exit 0 "$bt" train --config "$tmp/a.yaml"
printf '%s\n' "$out" >"$run/logs/local.out"
ls "$run/checkpoints" | sort -t_ -k3 -n | tr '\n' ' ' | grep -qx "checkpoint_step_4 checkpoint_step_8 checkpoint_step_10 checkpoint_step_12 " ||
  fail "the kept checkpoints are not the rule's: $(ls "$run/checkpoints")"
measured=$(find "$run" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
python3 - "$forecast" "$measured" <<'PY' || fail "forecast $forecast vs measured $measured bytes"
import sys
f, m = map(int, sys.argv[1:])
print(f"forecast {f} B, measured {m} B, {100 * (f - m) / m:+.2f} %")
assert abs(f - m) <= 0.05 * m
PY
checks=$((checks + 1)); echo "ok: the forecast is within 5 % of the run's footprint"

# One checkpoint folder as planned against as written, for other layouts: a bf16 export (with
# master weights beside it) on 1 rank, and 2 ranks each writing its own shards and the indexes.
for layout in "1 bf16" "2 fp32"; do
  read -r world export <<<"$layout"
  dir=$tmp/layout-$world-$export
  config "$tmp/l.yaml" "$dir" 2 2 1 0
  sed -i "s/write_gbps: 1}/write_gbps: 1, export_dtype: $export}/" "$tmp/l.yaml"
  expect_exit 0 "$bt" plan-memory --config "$tmp/l.yaml" --world-size "$world" --json
  planned=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["checkpoint"]["disk_bytes"])' "$out")
  pids=()
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world BATON_RDZV_FILE=$tmp/rdzv-$world-$export "$bt" train --config "$tmp/l.yaml" \
      >"$tmp/l-$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "rank of the $layout run failed: $(tail -3 "$tmp"/l-*.log)"; done
  written=$(find "$dir/checkpoints/checkpoint_step_2" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  python3 - "$planned" "$written" <<'PY' || fail "$layout: planned $planned vs written $written bytes"
import sys
p, w = map(int, sys.argv[1:])
print(f"one checkpoint folder: planned {p} B, written {w} B, {100 * (p - w) / w:+.2f} %")
assert abs(p - w) <= 0.01 * w
PY
  checks=$((checks + 1)); echo "ok: $world rank(s), $export export: the plan is within 1 % of the folder"
done

# 2. A forecast no filesystem holds: 10^12 steps, each one kept.
config "$tmp/huge.yaml" "$tmp/huge" 1000000000000 1 1000000000000 0
expect_exit 0 "$baton" submit "$tmp/huge.yaml" --dry-run --json
[ "$(storage_field "$out" fits)" = False ] || fail "a forecast of 10^12 checkpoints fits: $out"
expect_in "$err" "storage forecast"
expect_in "$err" "does not fit"
expect_exit 74 "$baton" submit "$tmp/huge.yaml" --dry-run --strict
expect_in "$err" "storage forecast"
expect_in "$err" "1000000000000 checkpoint(s)"
expect_in "$err" "checkpoint.keep_last"
expect_exit 74 "$baton" submit "$tmp/huge.yaml" --strict
[ ! -e "$tmp/huge" ] || fail "a refused submit created the run folder"
# A sweep: its members' forecasts summed.
sed '/^run:/d' "$tmp/huge.yaml" >"$tmp/base.yaml"
echo "run: {name: sw, steps: 1000000000000, seed: 11}" >>"$tmp/base.yaml"
printf 'name: sw\nbase: %s\ngrid: {optim.lr: [1.0e-3, 2.0e-3]}\n' "$tmp/base.yaml" >"$tmp/spec.yaml"
expect_exit 0 "$baton" sweep "$tmp/spec.yaml" --dry-run --json
[ "$(storage_field "$out" fits)" = False ] || fail "the sweep's forecast fits: $out"
expect_exit 74 "$baton" sweep "$tmp/spec.yaml" --dry-run --strict
expect_in "$err" "the sweep's storage forecast"
expect_in "$err" "2 members"

# 3. Real disks that fill up.
if ! mkdir -p "$tmp/probe" || ! mount -t tmpfs -o size=1m tmpfs "$tmp/probe" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (part 3); parts 1 and 2 passed ($checks checks)"
  exit 77
fi
mounts+=("$tmp/probe")
# One checkpoint's blocks on a tmpfs.
config "$tmp/one.yaml" "$tmp/probe/one" 2 2 1 0
expect_exit 0 "$bt" train --config "$tmp/one.yaml"
ckpt=$(du -sB1 "$tmp/probe/one/checkpoints/checkpoint_step_2" | cut -f1)
umount "$tmp/probe"

# tmpfs SIZE_BYTES DIR
tmpfs() {
  mkdir -p "$2"
  mount -t tmpfs -o "size=$1" tmpfs "$2"
  mounts+=("$2")
}
no_partial() {
  [ -z "$(find "$1/checkpoints" -maxdepth 1 -name '*.partial')" ] ||
    fail "a .partial folder is left: $(ls "$1/checkpoints")"
  checks=$((checks + 1)); echo "ok: no .partial folder in $1/checkpoints"
}

# Room for 3 checkpoints, keep_last 5: the 4th save cannot fit and retention frees nothing.
tmpfs $((3 * ckpt + ckpt / 2)) "$tmp/fs3"
config "$tmp/k5.yaml" "$tmp/fs3/run" 12 2 5 0
expect_exit 74 "$bt" train --config "$tmp/k5.yaml"
expect_in "$err$out" "checkpoint_step_8 needs"
expect_in "$err$out" "bytes are free in"
expect_in "$err$out" "the save was not started"
no_partial "$tmp/fs3/run"
for s in 2 4 6; do
  expect_exit 0 "$bt" ckpt verify "$tmp/fs3/run/checkpoints/checkpoint_step_$s"
done
[ "$(ls "$tmp/fs3/run/checkpoints" | wc -l)" -eq 3 ] || fail "not 3 checkpoints: $(ls "$tmp/fs3/run/checkpoints")"

# Room for 2.5 checkpoints, keep_last 2: each save first deletes the one retention drops after it.
tmpfs $((5 * ckpt / 2)) "$tmp/fs2"
config "$tmp/k2.yaml" "$tmp/fs2/run" 8 2 2 0
expect_exit 0 "$bt" train --config "$tmp/k2.yaml"
expect_in "$out" "checkpoint space: deleted checkpoint_step_2 now"
no_partial "$tmp/fs2/run"
[ "$(ls "$tmp/fs2/run/checkpoints" | tr '\n' ' ')" = "checkpoint_step_6 checkpoint_step_8 " ] ||
  fail "kept: $(ls "$tmp/fs2/run/checkpoints")"
for s in 6 8; do expect_exit 0 "$bt" ckpt verify "$tmp/fs2/run/checkpoints/checkpoint_step_$s"; done
echo "storage forecast: $checks checks passed"
