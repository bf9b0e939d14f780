#!/usr/bin/env bash
# Sharded optimizer state (optim.shard) bench: the same optimizer step (8 episodes, one per
# micro-batch, dealt over the ranks) with none / optimizer / gradients at W = 1, 2, 4 ranks over
# Gloo on CPU, side by side in one invocation. Per setting: the bytes the largest rank holds in
# weights, gradients (after the step) and AdamW state, the median step time over --repeat steps,
# and the collectives per step with the bytes each rank hands them. W = 4 runs four ranks on
# however many cores there are: its step time includes that oversubscription.
# usage: bench/sharding_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT
source bench/lib/machine_load.sh
bench_machine_load

"$bt" synth-data --out "$work/ds" --episodes 8 --seed 1 --frames 8:9 --height 8 --width 8 \
  --channels 4 --action-dim 8 --action-steps 4 --text-len 8 --text-dim 32 >/dev/null
repeat=${BATON_BENCH_REPEAT:-7}
run() { # run SHARD WORLD -> the ranks' lines
  local shard=$1 world=$2 store=$work/rdzv.$1.$2 r pids=()
  cat >"$work/$shard.yaml" <<YAML
run: {name: shard-bench, dir: $work/run, steps: 1, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 4}
model: {dim: 128, heads: 2, layers: 4, ffn_dim: 512, freq_dim: 64}
optim: {lr: 1.0e-4, warmup_steps: 0, shard: $shard}
YAML
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world BATON_RDZV_FILE=$store "$bt" one-step --config "$work/$shard.yaml" \
      --count 8 --batch-size 1 --repeat "$repeat" --out "$work/out.safetensors" \
      >"$work/$shard.$world.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$work/$shard.$world".*.log | grep '^rank '
}
for world in 1 2 4; do
  for shard in none optimizer gradients; do run "$shard" "$world"; done
done >"$work/all.txt"
python3 - "$work/all.txt" <<'PY'
import re, sys
pat = re.compile(r"rank (\d+)/(\d+) shard (\w+): weights (\d+) B, gradients held (\d+) B, optimizer "
                 r"state (\d+) B, step ([\d.]+) s .*all-reduce ([\d.]+) call\(s\) ([\d.]+) B, "
                 r"reduce-scatter ([\d.]+) call\(s\) ([\d.]+) B, all-gather ([\d.]+) call\(s\) ([\d.]+) B")
rows = {}
for line in open(sys.argv[1]):
    m = pat.match(line)
    if not m:
        continue
    rank, world, shard = int(m[1]), int(m[2]), m[3]
    v = [float(x) for x in m.groups()[3:]]
    key = (world, shard)
    rows.setdefault(key, []).append(v)
base = {}
print(f"{'W':>2} {'shard':<10} {'weights MB':>10} {'grads MB':>9} {'AdamW MB':>9} {'total MB':>9} "
      f"{'vs none':>8} {'step s':>8} {'vs none':>8}  collectives per step (calls, MB per rank)")
for world in (1, 2, 4):
    for shard in ("none", "optimizer", "gradients"):
        rs = rows.get((world, shard))
        if not rs:
            print(f"{world:>2} {shard:<10} missing")
            continue
        big = max(rs, key=lambda v: v[0] + v[1] + v[2])  # the largest rank
        total = big[0] + big[1] + big[2]
        step = max(v[3] for v in rs)
        if shard == "none":
            base[world] = (total, step)
        bt, bs = base[world]
        coll = (f"all-reduce {big[4]:.0f} ({big[5] / 1e6:.2f}), reduce-scatter {big[6]:.0f} "
                f"({big[7] / 1e6:.2f}), all-gather {big[8]:.0f} ({big[9] / 1e6:.2f})")
        print(f"{world:>2} {shard:<10} {big[0] / 1e6:>10.2f} {big[1] / 1e6:>9.2f} {big[2] / 1e6:>9.2f} "
              f"{total / 1e6:>9.2f} {total / bt:>7.2f}x {step:>8.4f} {step / bs:>7.2f}x  {coll}")
PY
