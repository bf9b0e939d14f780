#!/usr/bin/env bash
# Sharded optimizer state (optim.shard) bench: the same optimizer step (8 episodes, one per
# micro-batch, dealt over the ranks) with none / optimizer / gradients at W = 1, 2, 4 ranks over
# Gloo on CPU, side by side in one invocation. Per setting: the bytes the largest rank holds in
# weights, gradients (after the step) and AdamW state, the median step time over --repeat steps,
# and the collectives per step with the bytes each rank hands them. Then the bf16 layouts at the
# same W: optim.shard optimizer with the float32 master replicated ("casts": what autocast's bf16
# casts of the parameters the sharded layout splits hold from the forward to the backward)
# against optim.master sharded (bf16 compute copies, float32 masters on their owners only), with
# shard optimizer and gradients. W = 4 runs four ranks on however many cores there are: its step
# time includes that oversubscription. Last, the memory plan of the 5.1 B model (W = 8) at 1 to 4
# episodes per row, the master replicated next to sharded (bench/lib/plan_table.sh).
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
run() { # run SHARD WORLD [MASTER DTYPE] -> the ranks' lines
  local shard=$1 world=$2 master=${3:-replicated} dtype=${4:-float32} r pids=()
  local tag=$shard.$master.$dtype store=$work/rdzv.$1.$2.$master.$dtype
  cat >"$work/$tag.yaml" <<YAML
run: {name: shard-bench, dir: $work/run, steps: 1, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 4}
model: {dim: 128, heads: 2, layers: 4, ffn_dim: 512, freq_dim: 64}
optim: {lr: 1.0e-4, warmup_steps: 0, shard: $shard, master: $master}
train: {dtype: $dtype}
YAML
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world BATON_RDZV_FILE=$store "$bt" one-step --config "$work/$tag.yaml" \
      --count 8 --batch-size 1 --repeat "$repeat" --out "$work/out.safetensors" \
      >"$work/$tag.$world.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$work/$tag.$world".*.log | grep '^rank '
}
for world in 1 2 4; do
  for shard in none optimizer gradients; do run "$shard" "$world"; done
  run optimizer "$world" replicated bfloat16
  run optimizer "$world" sharded bfloat16
  run gradients "$world" sharded bfloat16
done >"$work/all.txt"
python3 - "$work/all.txt" <<'PY'
import re, sys
pat = re.compile(r"rank (\d+)/(\d+) shard (\w+) master (\w+) dtype (\w+): weights (\d+) B, "
                 r"masters (\d+) B, cast copies (\d+) B, gradients held (\d+) B, optimizer "
                 r"state (\d+) B, step ([\d.]+) s .*all-reduce ([\d.]+) call\(s\) ([\d.]+) B, "
                 r"reduce-scatter ([\d.]+) call\(s\) ([\d.]+) B, all-gather ([\d.]+) call\(s\) ([\d.]+) B")
rows = {}
for line in open(sys.argv[1]):
    m = pat.match(line)
    if not m:
        continue
    world, shard, master, dtype = int(m[2]), m[3], m[4], m[5]
    # weights, masters, cast copies, gradients, AdamW, step s, then the collectives
    v = [float(x) for x in m.groups()[5:]]
    rows.setdefault((world, shard, master, dtype), []).append(v)


def coll(v):
    return (f"all-reduce {v[6]:.0f} ({v[7] / 1e6:.2f}), reduce-scatter {v[8]:.0f} "
            f"({v[9] / 1e6:.2f}), all-gather {v[10]:.0f} ({v[11] / 1e6:.2f})")


def largest(rs):
    return max(rs, key=lambda v: sum(v[:5]))


print("float32: optim.shard (weights are the masters)")
print(f"{'W':>2} {'shard':<10} {'weights MB':>10} {'grads MB':>9} {'AdamW MB':>9} {'total MB':>9} "
      f"{'vs none':>8} {'step s':>8} {'vs none':>8}  collectives per step (calls, MB per rank)")
base = {}
for world in (1, 2, 4):
    for shard in ("none", "optimizer", "gradients"):
        rs = rows.get((world, shard, "replicated", "float32"))
        if not rs:
            print(f"{world:>2} {shard:<10} missing")
            continue
        big = largest(rs)
        total = sum(big[:5])
        step = max(v[5] for v in rs)
        if shard == "none":
            base[world] = (total, step)
        bt, bs = base.get(world, (total, step))
        print(f"{world:>2} {shard:<10} {big[0] / 1e6:>10.2f} {big[3] / 1e6:>9.2f} {big[4] / 1e6:>9.2f} "
              f"{total / 1e6:>9.2f} {total / bt:>7.2f}x {step:>8.4f} {step / bs:>7.2f}x  {coll(big)}")
print()
print("bfloat16: optim.master replicated (autocast's cast copies) vs sharded (bf16 copies, owners' masters)")
print(f"{'W':>2} {'shard/master':<20} {'weights MB':>10} {'masters MB':>10} {'casts MB':>8} "
      f"{'grads MB':>9} {'AdamW MB':>9} {'total MB':>9} {'vs repl':>8} {'step s':>8} {'vs repl':>8}  "
      f"collectives per step (calls, MB per rank)")
for world in (1, 2, 4):
    ref = None
    for shard, master in (("optimizer", "replicated"), ("optimizer", "sharded"),
                          ("gradients", "sharded")):
        rs = rows.get((world, shard, master, "bfloat16"))
        name = f"{shard}/{master}"
        if not rs:
            print(f"{world:>2} {name:<20} missing")
            continue
        big = largest(rs)
        total = sum(big[:5])
        step = max(v[5] for v in rs)
        if ref is None:
            ref = (total, step)
        print(f"{world:>2} {name:<20} {big[0] / 1e6:>10.2f} {big[1] / 1e6:>10.2f} {big[2] / 1e6:>8.2f} "
              f"{big[3] / 1e6:>9.2f} {big[4] / 1e6:>9.2f} {total / 1e6:>9.2f} {total / ref[0]:>7.2f}x "
              f"{step:>8.4f} {step / ref[1]:>7.2f}x  {coll(big)}")
PY

# The real model's plan by row length, master replicated next to sharded.
source bench/lib/plan_table.sh
plan_table "$bt" "$work"
