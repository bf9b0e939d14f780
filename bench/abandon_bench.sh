#!/usr/bin/env bash
# Stop latency on long steps: a CPU run whose optimizer step takes >= 10 s (a small model, as many
# micro-steps as a calibration step says make ~15 s) gets SIGUSR1 at a random moment inside a
# step. Prints
#   signal -> exit: abandon X s (one block fwd+bwd Y s), save Z s (step T s; exit W s after the signal)
# X: the trainer's own signal -> abandoned (the vote done), from its "abandoned step" line;
# Y: the median forward + backward of one transformer block in the abandoned step (the trainer
#    times its blocks), from the same line;
# Z: the stop save (its checkpoint event); T: the median step; W: signal to process exit, wall.
# checkpoint_bench.sh runs it last; alone: bench/abandon_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }

"$bt" synth-data --out "$work/ds" --episodes 16 --seed 0 --frames 4:6 --height 4 --width 4 >/dev/null
# cfg ACCUM STEPS PROFILE: a small model (blocks of milliseconds), one episode per micro-step.
cfg() {
  cat >"$work/cfg.yaml" <<YAML
run: {name: abandon-bench, dir: $work/run, steps: $2, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 1}
model: {dim: 64, heads: 2, layers: 4, ffn_dim: 256, freq_dim: 64}
optim: {lr: 1.0e-4, warmup_steps: 0, grad_accum: $1}
checkpoint: {every: 100000, keep_last: 1}
train: {log_every: 1, profile: $3}
YAML
}
# Calibration: two steps of 16 micro-steps (the first is cold); then as many micro-steps as the
# second's time says make a step of ~15 s.
cfg 16 2 0
"$bt" train --config "$work/cfg.yaml" --run-dir "$work/calib" >"$work/calib.log" 2>&1
accum=$(python3 - "$work/calib/events/local.0.jsonl" <<'PY'
import json, math, sys
t = [json.loads(l)["step_time_s"] for l in open(sys.argv[1]) if '"type":"step"' in l][-1]
print(min(4096, max(16, math.ceil(15.0 / (t / 16)))))
PY
)
cfg "$accum" 100000 0
"$bt" train --config "$work/cfg.yaml" >"$work/train.log" 2>&1 &
pid=$!
ev=$work/run/events/local.0.jsonl
# One whole step first (its blocks are timed), then a random moment of the next.
for _ in $(seq 6000); do grep -q '"type":"step"' "$ev" 2>/dev/null && break; sleep 0.1; done
step_s=$(grep '"type":"step"' "$ev" | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["step_time_s"])')
sleep "$(python3 -c "import random; print(random.uniform(0.1, 0.9) * $step_s)")"
s0=$(now)
kill -USR1 $pid
rc=0; wait $pid || rc=$?
s1=$(now)
python3 - "$work/train.log" "$ev" "$s0" "$s1" "$rc" "$accum" <<'PY'
import json, re, sys
log, ev, s0, s1, rc = open(sys.argv[1]).read(), sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
accum = int(sys.argv[6])
m = re.search(r"^abandoned step \d+ \(rank 0\): USR1 landed in (.*); left (.*), ([\d.]+) s after the signal; "
              r"one block fwd\+bwd ([\d.]+) s", log, re.M)
if m is None or rc != 75:
    sys.exit(f"no abandon (exit {rc}):\n" + log[-2000:])
rows = [json.loads(l) for l in open(ev)]
steps = sorted(r["step_time_s"] for r in rows if r["type"] == "step")
save = [r for r in rows if r["type"] == "checkpoint" and r["reason"] == "signal"]
save_s = save[-1]["seconds"] if save else float("nan")
print(f"signal -> exit: abandon {float(m.group(3)):.3f} s (one block fwd+bwd {float(m.group(4)):.3f} s), "
      f"save {save_s:.2f} s (step {steps[len(steps) // 2]:.1f} s of {accum} micro-steps; exit {s1 - s0:.2f} s "
      f"after the signal; "
      f"landed in {m.group(1)})")
PY
