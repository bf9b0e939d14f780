#!/usr/bin/env bash
# Activation checkpointing bench (train.activation_checkpointing): the same run with `none`,
# `blocks` and `blocks+attention`, side by side in one invocation, each in its own process: peak
# memory (the process's peak RSS over the profiled micro-steps, from the trainer's microstep
# events; the runs hold the same weights, gradients and AdamW state, so the difference is the
# activations kept for backward) and the median forward+backward seconds per micro-step; ratios
# of each mode to none.
# A model deep enough that activations matter: dim 128, 8 layers, packed rows of 4 episodes of
# 16 frames (2 optimizer steps).
# usage: bench/activation_checkpointing_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT
source bench/lib/machine_load.sh
bench_machine_load

"$bt" synth-data --out "$work/ds" --episodes 8 --seed 1 --frames 16:17 --height 8 --width 8 \
  --channels 4 --action-dim 8 --action-steps 4 --text-len 16 --text-dim 32 >/dev/null
run_one() { # run_one MODE -> "peak_MB tokens fwd_bwd_s"
  local mode=$1 dir=$work/run-${1/+/-}
  cat >"$work/$mode.yaml" <<YAML
run: {name: ac-bench, dir: $dir, steps: 2, seed: 0}
data: {path: $work/ds, batch_size: 4, pad_multiple: 4}
model: {dim: 128, heads: 2, layers: 8, ffn_dim: 512, freq_dim: 64}
optim: {lr: 1.0e-4, warmup_steps: 0}
checkpoint: {every: 1000, keep_last: 1}
train: {log_every: 1, profile: 4, activation_checkpointing: $mode}
YAML
  "$bt" train --config "$work/$mode.yaml" >"$work/$mode.log" 2>&1
  python3 - "$dir/events/local.0.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
micro = [r for r in rows if r.get("type") == "microstep"]
start = [r for r in rows if r.get("type") == "segment_start"][0]
peak = max(r["peak_bytes"] for r in micro)
# the first micro-step's peak includes the one-time optimizer state; report both
t = sorted(r["fwd_bwd_s"] for r in micro[1:]) or [micro[0]["fwd_bwd_s"]]
print(f"{peak / 1e6:.1f} {micro[0]['tokens']} {t[len(t) // 2]:.3f}")
PY
}
read -r peak_n tok_n t_n < <(run_one none)
read -r peak_b tok_b t_b < <(run_one blocks)
read -r peak_a tok_a t_a < <(run_one blocks+attention)
printf '%-17s %12s %10s %14s\n' mode "peak RSS MB" tokens "fwd+bwd s"
printf '%-17s %12s %10s %14s\n' none "$peak_n" "$tok_n" "$t_n"
printf '%-17s %12s %10s %14s\n' blocks "$peak_b" "$tok_b" "$t_b"
printf '%-17s %12s %10s %14s\n' blocks+attention "$peak_a" "$tok_a" "$t_a"
python3 -c "print(f'blocks/none: peak memory {$peak_b/$peak_n:.2f}x, fwd+bwd time {$t_b/$t_n:.2f}x')"
python3 -c "print(f'blocks+attention/none: peak memory {$peak_a/$peak_n:.2f}x, fwd+bwd time {$t_a/$t_n:.2f}x')"
