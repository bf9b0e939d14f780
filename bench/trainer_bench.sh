#!/usr/bin/env bash
# Trainer benchmarks (the packed trainer issues), figures printed as ratios from one run:
#  1. training tokens/s, batch 4 packed vs batch 1, same model and episodes, at the small model
#     (dim 96, 2 layers) and a wider one (dim 512, 4 layers) where the linear layers matter; the
#     achieved FLOP/s of the step (model FLOPs per valid token x tokens/s) next to a float32
#     torch::mm measured in the same run; attention ops per layer, packed vs not;
#  2. block-sparse vs dense masked attention (forward + backward): time and peak memory at 4k, 16k
#     and 64k tokens per row, and computed / allowed score entries;
#  3. 2 Gloo ranks: all-reduce calls and bytes per optimizer step for batch 1 x accum 16 and
#     batch 4 x accum 4, and the step-time ratio.
# usage: bench/trainer_bench.sh [BUILD_DIR]
#   BENCH_EPISODES (16), BENCH_REPS (3): episodes and timed rounds of the small model's case
#   BENCH_WIDE_EPISODES (8): episodes of the wide model's case (0 skips it; 2 rounds)
#   BENCH_ATTENTION_TOKENS ("4096 16384 65536"): row sizes of section 2 (dense up to 16384)
#   BENCH_PROFILE (0): 1 prints the time per top-level op of one step of each throughput case
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
build=${1:-build}
bt=$build/trainer/baton-train
bb=$build/bench/baton-bench-trainer
[ -x "$bt" ] && [ -x "$bb" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) CPUs; libtorch intra-op threads = CPUs per rank"
episodes=${BENCH_EPISODES:-16}
reps=${BENCH_REPS:-3}
wide_episodes=${BENCH_WIDE_EPISODES:-8}
profile=()
[ "${BENCH_PROFILE:-0}" = 1 ] && profile=(--profile)

"$bt" synth-data --out "$work/ds" --episodes 32 --seed 0 --frames 24:64 >/dev/null
cat >"$work/cfg.yaml" <<YAML
run: {name: bench, dir: $work/run, steps: 1, seed: 0}
data: {path: $work/ds, batch_size: 4, pad_multiple: 8}
model: {dim: 96, heads: 4, layers: 2, ffn_dim: 384, freq_dim: 64}
optim: {lr: 1.0e-3, warmup_steps: 0}
YAML
sed -e 's/dim: 96, heads: 4, layers: 2, ffn_dim: 384/dim: 512, heads: 8, layers: 4, ffn_dim: 2048/' \
  "$work/cfg.yaml" >"$work/wide.yaml"

echo
echo "== 1. tokens/s: batch 4 packed vs batch 1 (F 24..64, ~40 tokens/frame; batches of similar lengths)"
report() {  # label B1_JSON B4_JSON GEMM_JSON
  python3 - "$@" <<'PY'
import json, sys
label, b1, b4, g = sys.argv[1], *(json.loads(a) for a in sys.argv[2:])
print(f"{label}: dim {b1['dim']}, {b1['layers']} layers, {b1['episodes']} episodes, "
      f"{b1['flops_per_token']/1e6:.1f} MFLOP per valid token "
      f"({b1['attention_flops_per_token']/1e6:.1f} of them attention)")
for r in (b1, b4):
    print(f"  batch {r['batch']:>2} x {r['micro_batches']:>2} micro-batches: {r['tokens_per_s']:>9.0f} valid tok/s "
          f"(step {r['best_step_seconds']:.2f} s, {r['padded_tokens']} padded tokens), "
          f"{r['achieved_flops_per_s']/1e9:6.2f} GFLOP/s = {r['achieved_flops_per_s']/g['flops_per_s']:.0%} of the GEMM; "
          f"attention: {r['attention_ops_per_layer']} ops per layer over the {r['episodes']} episodes "
          f"({r['attention_calls_per_layer']} batched calls), computed/allowed {r['computed_pairs']/r['allowed_pairs']:.2f}")
row = lambda r: (r['valid_tokens'] + r['padded_tokens']) / r['best_step_seconds']
print(f"  packed / batch 1 = {b4['tokens_per_s'] / b1['tokens_per_s']:.2f}x valid tok/s "
      f"({row(b4) / row(b1):.2f}x row tok/s, padded frames included: the padding of the longer rows "
      f"costs {b4['padded_tokens'] / (b4['valid_tokens'] + b4['padded_tokens']):.0%} vs "
      f"{b1['padded_tokens'] / (b1['valid_tokens'] + b1['padded_tokens']):.0%} of their tokens)")
print(f"  attention ops per layer "
      f"{b4['attention_ops_per_layer']} vs {b1['attention_ops_per_layer']} = {b4['attention_ops_per_layer']/b1['attention_ops_per_layer']:.2f}x")
print(f"  GEMM: torch::mm {g['dtype']} on {g['device']} {g['m']}x{g['k']} @ {g['k']}x{g['n']}: {g['flops_per_s']/1e9:.2f} GFLOP/s ({g['threads']} threads)")
for r in (b1, b4):
    if "profile" in r:
        print(f"  time per top-level op, one step at batch {r['batch']}:")
        for p in r["profile"]:
            print(f"    {p['seconds']:8.3f} s {p['calls']:>7} x {p['op']}")
PY
}
# Batch 1 and batch 4 (and a float32 GEMM) timed in turns in one process, best of the rounds:
# load that comes and goes during the run hits both alike.
"$bb" throughput --config "$work/cfg.yaml" --batch 1,4 --episodes "$episodes" --reps "$reps" --gemm 1024 "${profile[@]}" >"$work/small.jsonl"
report "small model" "$(sed -n 1p "$work/small.jsonl")" "$(sed -n 2p "$work/small.jsonl")" "$(sed -n 3p "$work/small.jsonl")"
echo "(the reference figure, docs/design.md: 1.15x per token on one GPU)"
if [ "$wide_episodes" -gt 0 ]; then
  "$bb" throughput --config "$work/wide.yaml" --batch 1,4 --episodes "$wide_episodes" --reps 2 \
    --gemm 1024 "${profile[@]}" >"$work/wide.jsonl"
  report "wide model" "$(sed -n 1p "$work/wide.jsonl")" "$(sed -n 2p "$work/wide.jsonl")" "$(sed -n 3p "$work/wide.jsonl")"
fi

echo
echo "== 2. block-sparse vs dense attention (window 32, chunk 2, 2 heads x 64)"
rows=$work/att.jsonl
for t in ${BENCH_ATTENTION_TOKENS:-4096 16384 65536}; do
  "$bb" attention --tokens $t --path sparse >>"$rows"
  if [ $t -le 16384 ]; then "$bb" attention --tokens $t --path dense >>"$rows"; fi
done
python3 - "$rows" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["tokens"], {})[r["path"]] = r
print(f"{'tokens':>7} {'sparse s':>9} {'dense s':>9} {'speedup':>8} {'sparse MB':>10} {'dense MB':>9} {'mem ratio':>9} {'computed/allowed':>17}")
for t, d in sorted(by.items()):
    s = d["sparse"]
    line = f"{t:>7} {s['seconds']:>9.2f} "
    if "dense" in d:
        g = d["dense"]
        line += (f"{g['seconds']:>9.2f} {g['seconds']/s['seconds']:>7.1f}x {s['rss_growth_bytes']/1e6:>10.0f} "
                 f"{g['rss_growth_bytes']/1e6:>9.0f} {g['rss_growth_bytes']/max(s['rss_growth_bytes'],1):>8.1f}x")
    else:
        need = 4 * t * t * 2 * 4 / 1e9  # scores, probs, grads of each, 2 heads, float32
        line += f"{'skipped':>9} {'':>8} {s['rss_growth_bytes']/1e6:>10.0f} {'~%.0f GB' % need:>9} {'':>9}"
    line += f" {s['computed_pairs']/s['allowed_pairs']:>16.2f}x"
    if "dense" in d:
        line += f" (dense {d['dense']['computed_pairs']/s['allowed_pairs']:.1f}x)"
    print(line)
print("dense at 64k needs its T x T score matrices (~4 of them) and is not run on this 24 GB machine")
PY

echo
echo "== 3. two Gloo ranks, one optimizer step over 32 episodes"
for b in 1 4; do
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 BATON_RDZV_FILE=$work/rdzv.$b "$bt" one-step --config "$work/cfg.yaml" \
      --count 32 --batch-size $b --out "$work/step$b.safetensors" >"$work/rank$r.$b.log" 2>&1 &
  done
  wait
  grep -h "one step" "$work/rank0.$b.log"
done
python3 - "$work/rank0.1.log" "$work/rank0.4.log" <<'PY'
import re, sys
def parse(p):
    t = open(p).read()
    calls, nbytes, secs = re.search(r"(\d+) all-reduce call\(s\), (\d+) bytes, step ([\d.]+) s", t).groups()
    return int(calls), int(nbytes), float(secs)
c1, b1, s1 = parse(sys.argv[1]); c4, b4, s4 = parse(sys.argv[2])
print(f"batch 1 x accum 16: {c1} all-reduce call(s), {b1/1e6:.2f} MB per step, {s1:.2f} s")
print(f"batch 4 x accum 4 : {c4} all-reduce call(s), {b4/1e6:.2f} MB per step, {s4:.2f} s")
print(f"step time batch 4 / batch 1 = {s4/s1:.2f}x; reductions per step: {c1} vs {c4} (one bucketed reduction either way)")
PY
