#!/usr/bin/env bash
# Stop latency on long steps: a CPU run whose optimizer step takes >= 10 s (a small model, many
# micro-steps) gets SIGUSR1 at a random moment inside a step. Prints
#   signal -> exit: abandon X s (one block fwd+bwd Y s), save Z s (step T s; exit W s after the signal)
# X: the trainer's own signal -> abandoned (the vote done), from its "abandoned step" line;
# Y: the longest forward + backward of one transformer block in the latest step of the same run
#    (the trainer times its blocks), from the same line;
# Z: the stop save (its checkpoint event); T: the median step; W: signal to process exit, wall.
# checkpoint_bench.sh runs it last; alone: bench/abandon_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }

"$bt" synth-data --out "$work/ds" --episodes 16 --seed 0 --frames 6:8 --height 8 --width 8 >/dev/null
# ~4 M parameters; 64 micro-steps of one episode each: seconds per step, milliseconds per block.
cat >"$work/cfg.yaml" <<YAML
run: {name: abandon-bench, dir: $work/run, steps: 1000, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 1}
model: {dim: ${BATON_BENCH_DIM:-256}, heads: 4, layers: 4, ffn_dim: 1024, freq_dim: 256}
optim: {lr: 1.0e-4, warmup_steps: 0, grad_accum: ${BATON_BENCH_ACCUM:-64}}
checkpoint: {every: 1000, keep_last: 1}
train: {log_every: 1}
YAML
"$bt" train --config "$work/cfg.yaml" >"$work/train.log" 2>&1 &
pid=$!
ev=$work/run/events/local.0.jsonl
# One whole step first (its blocks are timed), then a random moment of the next.
for _ in $(seq 1200); do grep -q '"type":"step"' "$ev" 2>/dev/null && break; sleep 0.1; done
step_s=$(grep '"type":"step"' "$ev" | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["step_time_s"])')
sleep "$(python3 -c "import random; print(random.uniform(0.1, 0.9) * $step_s)")"
s0=$(now)
kill -USR1 $pid
rc=0; wait $pid || rc=$?
s1=$(now)
python3 - "$work/train.log" "$ev" "$s0" "$s1" "$rc" <<'PY'
import json, re, sys
log, ev, s0, s1, rc = open(sys.argv[1]).read(), sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
m = re.search(r"^abandoned step \d+ \(rank 0\): USR1 landed in (.*); left (.*), ([\d.]+) s after the signal; "
              r"one block fwd\+bwd ([\d.]+) s", log, re.M)
if m is None or rc != 75:
    sys.exit(f"no abandon (exit {rc}):\n" + log[-2000:])
rows = [json.loads(l) for l in open(ev)]
steps = sorted(r["step_time_s"] for r in rows if r["type"] == "step")
save = [r for r in rows if r["type"] == "checkpoint" and r["reason"] == "signal"]
save_s = save[-1]["seconds"] if save else float("nan")
print(f"signal -> exit: abandon {float(m.group(3)):.3f} s (one block fwd+bwd {float(m.group(4)):.3f} s), "
      f"save {save_s:.2f} s (step {steps[len(steps) // 2]:.1f} s; exit {s1 - s0:.2f} s after the signal; "
      f"landed in {m.group(1)})")
PY
