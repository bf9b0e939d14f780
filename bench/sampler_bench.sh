#!/usr/bin/env bash
# Sampler benchmark (issue: the packed data pipeline). Prints, side by side from one run:
#  1. the reference setting (docs/design.md) — 1270 episodes, F 103..362, batch 4, world 8, pool
#     50, pad multiple 8 — for the global plan, the per-rank plan, and pool_factor 1 (unbucketed)
#     baselines: padding waste (rank 0 and all ranks), distinct padded shapes, ratios vs the
#     reference figures (docs/design.md) 2.3 % / 19;
#  2. the time to build one rank's epoch plan over 1 million episodes (metadata only).
# usage: bench/sampler_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A real dataset on disk (small latents: the sampler reads metadata only, the files are real).
"$bt" synth-data --out "$work/ds" --episodes 1270 --seed 0 --frames 103:362 \
  --height 4 --width 4 --channels 2 >/dev/null

stats() {  # plan pool_factor -> JSON
  "$bt" sampler-stats --data "$work/ds" --batch-size 4 --world-size 8 --pad-multiple 8 \
    --pool-factor "$2" --seed 0 --plan "$1" --json
}
{
  stats global 50; stats per_rank 50; stats global 1; stats per_rank 1
} >"$work/rows.jsonl"

# 1M episodes: an index alone (no episode files exist; the sampler must not need them).
mkdir -p "$work/big/meta"
python3 - "$work/big/meta/episodes.jsonl" <<'PY'
import random, sys
r = random.Random(0)
with open(sys.argv[1], "w") as f:
    for i in range(1_000_000):
        F = r.randint(103, 362)
        f.write('{"id":"e%d","n_video":%d,"file":"episodes/e%d.safetensors"}\n' % (i, 4 * (F - 1) + 1, i))
PY
for plan in global per_rank; do
  "$bt" sampler-stats --data "$work/big" --batch-size 4 --world-size 8 --pad-multiple 8 \
    --pool-factor 50 --seed 0 --plan $plan --json
done >"$work/big.jsonl"

python3 - "$work/rows.jsonl" "$work/big.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
big = [json.loads(l) for l in open(sys.argv[2])]
REF_WASTE, REF_SHAPES = 0.023, 19  # the reference figures (docs/design.md)
r0 = rows[0]
print(f"sampler bench: {r0['episodes']} episodes, F {r0['min_frames']}..{r0['max_frames']}, "
      f"batch 4, world 8, pad multiple 8, seed 0, epoch 0")
print(f"{'plan':<9} {'pool':>4} {'batches/rank':>12} {'waste r0':>9} {'waste all':>9} "
      f"{'shapes r0':>9} {'shapes all':>10} {'waste/ref':>11} {'shapes/ref':>12}")
for r in rows:
    print(f"{r['plan']:<9} {r['pool_factor']:>4} {r['batches_per_epoch']:>12} "
          f"{100*r['padding_waste']:>8.2f}% {100*r['padding_waste_all_ranks']:>8.2f}% "
          f"{r['distinct_shapes']:>9} {r['distinct_shapes_all_ranks']:>10} "
          f"{r['padding_waste']/REF_WASTE:>10.2f}x {r['distinct_shapes']/REF_SHAPES:>11.2f}x")
g, p, gu, pu = rows
print(f"global vs per_rank waste (all ranks): {g['padding_waste_all_ranks']/p['padding_waste_all_ranks']:.2f}x; "
      f"bucketed global vs unbucketed per_rank: {g['padding_waste_all_ranks']/pu['padding_waste_all_ranks']:.3f}x")
for b in big:
    print(f"plan build over {b['episodes']:,} episodes ({b['plan']}, rank 0 of 8): "
          f"{1e3*b['plan_seconds']:.1f} ms for {b['batches_per_epoch']:,} batches")
PY
