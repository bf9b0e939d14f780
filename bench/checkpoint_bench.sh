#!/usr/bin/env bash
# Checkpoint benchmark (the full-state checkpoint issue): save and load throughput of a model with
# ~1 GB of state (fp32 weights + AdamW moments), next to this disk's own sequential write speed
# measured in the same run (dd with fsync), and the time from a stop signal to the process exit.
# usage: bench/checkpoint_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT

echo "== disk: dd 1 GiB with fsync into $work"
dd_out=$(dd if=/dev/zero of="$work/dd.bin" bs=1M count=1024 conv=fsync 2>&1 | tail -1)
rm -f "$work/dd.bin"
echo "$dd_out"

"$bt" synth-data --out "$work/ds" --episodes 8 --seed 0 --frames 4:6 --height 4 --width 4 >/dev/null
# ~85M parameters: 4 B weights + 8 B AdamW moments each = ~1 GB of state.
cat >"$work/cfg.yaml" <<YAML
run: {name: ckpt-bench, dir: $work/run, steps: 2, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 1}
model: {dim: 1024, heads: 16, layers: 5, ffn_dim: 4096, freq_dim: 256}
optim: {lr: 1.0e-4, warmup_steps: 0}
checkpoint: {every: 1, keep_last: 1}
train: {log_every: 1}
YAML
echo "== save: 2 steps, a checkpoint after each"
"$bt" train --config "$work/cfg.yaml" >"$work/train.log" 2>&1
echo "== load: resume from the last checkpoint (target already reached)"
sed -i 's/steps: 2,/steps: 3,/' "$work/cfg.yaml"
"$bt" train --config "$work/cfg.yaml" >>"$work/train.log" 2>&1

echo "== stop signal to exit: SIGUSR1 during training"
sed -i 's/steps: 3,/steps: 1000,/' "$work/cfg.yaml"
"$bt" train --config "$work/cfg.yaml" >>"$work/train.log" 2>&1 &
pid=$!
ev=$work/run/events/local.0.jsonl
for _ in $(seq 1200); do [ "$(grep -c '"type":"step"' "$ev" 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.1; done
t0=$(date +%s.%N)
kill -USR1 $pid
rc=0; wait $pid || rc=$?
t1=$(date +%s.%N)

python3 - "$ev" "$dd_out" "$t0" "$t1" "$rc" <<'PY'
import json, re, sys
ev, dd, t0, t1, rc = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rows = [json.loads(l) for l in open(ev)]
m = re.search(r"([\d.]+) ([kMG]?B)/s", dd)
unit = {"B": 1e-9, "kB": 1e-6, "MB": 1e-3, "GB": 1.0}[m.group(2)]
disk = float(m.group(1)) * unit
saves = [r for r in rows if r["type"] == "checkpoint"]
loads = [r for r in rows if r["type"] == "segment_start" and r["mode"] == "exact"]
steps = [r for r in rows if r["type"] == "step"]
save = saves[1] if len(saves) > 1 else saves[0]
gb = save["bytes"] / 1e9
print(f"state: {gb:.2f} GB per checkpoint (weights + AdamW + trainer state)")
print(f"disk sequential write (dd, fsync): {disk:.2f} GB/s")
print(f"save: {save['seconds']:.2f} s = {gb/save['seconds']:.2f} GB/s = {gb/save['seconds']/disk:.2f}x the disk (incl. hashing, fsync, rename)")
ld = loads[0]["load_seconds"]
print(f"load (verify hashes + read): {ld:.2f} s = {gb/ld:.2f} GB/s")
sig = [r for r in rows if r["type"] == "checkpoint" and r["reason"] == "signal"]
end = [r for r in rows if r["type"] == "segment_end"][-1]
step_s = sorted(r["step_time_s"] for r in steps)[len(steps) // 2]
print(f"signal -> exit: {t1 - t0:.2f} s (exit {rc}; median step {step_s:.2f} s, "
      f"signal save {sig[-1]['seconds']:.2f} s, stopped at step {end['step']}, reason {end['reason']})")
PY
