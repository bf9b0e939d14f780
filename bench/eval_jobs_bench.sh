#!/usr/bin/env bash
# Training step time with eval jobs running beside it (eval.mode job, docs/eval.md "Eval jobs")
# against the same run without them, on the dev cluster, side by side in one invocation. Both
# runs use the same config (so the same held-out split and training data) and both have a
# `baton watch` running; only for the second does it find baton-train, and so submit one eval job
# per save. Prints, per run, the median and p90 of the
# trainer's step_time_s over the steps after the first save (the compile-free steady state), the
# steps that ran while an eval job was running (from its batch script's start to its result) and
# their median, and the ratios with/without.
# Needs the 1-node dev cluster; cleans up its jobs.
# usage: bench/eval_jobs_bench.sh [BUILD_DIR] (BATON_BENCH_STEPS, default 1600, long enough that
# steps run beside the eval jobs; _REPEAT, default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
baton=$build/orchestrator/baton
bt=$build/trainer/baton-train
[ -x "$baton" ] && [ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
"$bt" eval --help >/dev/null 2>&1 || { echo "$bt has no eval command" >&2; exit 1; }
steps=${BATON_BENCH_STEPS:-1600}
repeat=${BATON_BENCH_REPEAT:-1}
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
export BATON_HOME=$work/home BATON_TRAIN_BIN=$bt
cleanup() {
  local j
  for j in $(cat "$work/pids" 2>/dev/null); do kill "$j" 2>/dev/null || true; done
  for j in $(cat "$work/jobs" 2>/dev/null) $(squeue -h -o '%i %j' | awk '$2 ~ /^baton-eval-/ {print $1}'); do
    scontrol update jobid="$j" Requeue=0 2>/dev/null || true
    scancel "$j" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
source bench/lib/machine_load.sh
bench_machine_load

"$bt" synth-data --out "$work/ds" --episodes 24 --seed 7 --frames 8:12 --height 8 --width 8 \
  --channels 4 --action-dim 4 --action-steps 2 --text-len 4 --text-dim 16 >/dev/null
every=$((steps / 10))
cat >"$work/cfg.yaml" <<YAML
run: {name: eval-bench, steps: $steps, seed: 3}
data: {path: $work/ds, batch_size: 4, pad_multiple: 4}
model: {dim: 64, heads: 2, layers: 2, ffn_dim: 128, freq_dim: 32}
optim: {lr: 1.0e-3, warmup_steps: 5}
checkpoint: {every: $every, keep_last: 10, async: false}
train: {log_every: 50}
eval: {fraction: 0.25, seed: 3, every: 1, mode: job, time: "5:00", cpus_per_task: 1}
slurm: {partition: debug, cpus_per_task: 1, time: "20:00"}
YAML

# one_run WITH_EVALS -> "median_s p90_s steps_beside_evals evals": one run to COMPLETED.
one_run() {
  local out run job dir
  out=$("$baton" submit "$work/cfg.yaml" --json)
  run=$(jq -r .run_id <<<"$out") job=$(jq -r .job_id <<<"$out") dir=$(jq -r .run_dir <<<"$out")
  echo "$job" >>"$work/jobs"
  local trainer=/nonexistent/baton-train watch
  [ "$1" = 1 ] && trainer=$bt
  BATON_TRAIN_BIN=$trainer "$baton" watch --interval 2 >>"$work/watch.log" 2>&1 &
  watch=$!
  echo "$watch" >>"$work/pids"
  local t=0
  until [ "$("$baton" show "$run" --json 2>/dev/null | jq -r .status)" = COMPLETED ]; do
    sleep 2
    t=$((t + 2))
    [ $t -lt 900 ] || { echo "run $run did not complete" >&2; exit 1; }
  done
  if [ "$1" = 1 ]; then
    # The last save's eval, so every eval job's running window is known.
    until [ "$(ls "$dir/evals" 2>/dev/null | wc -l)" -ge 10 ] || [ $t -ge 900 ]; do
      sleep 2
      t=$((t + 2))
    done
  fi
  kill "$watch" 2>/dev/null || true
  wait "$watch" 2>/dev/null || true
  python3 - "$dir" "$every" <<'PY'
import datetime, glob, json, os, statistics, sys
run, every = sys.argv[1], int(sys.argv[2])
rows = []
for f in sorted(glob.glob(os.path.join(run, "events", "*.jsonl"))):
    rows += [json.loads(l) for l in open(f) if l.strip()]
steps = [r for r in rows if r.get("type") == "step" and r["step"] >= every]
# An eval job's running window: from its log's first line (the batch script's start, whole
# seconds) to its result's time.
windows = []
for f in glob.glob(os.path.join(run, "evals", "step_*.json")):
    end = os.path.getmtime(f)
    start = end - float(json.load(open(f)).get("seconds") or 0)
    step = os.path.basename(f)[5:-5]
    for log in glob.glob(os.path.join(run, "logs", f"eval_step_{step}.*.out")):
        first = open(log).readline().rsplit(" at ", 1)[-1].strip()
        try:
            start = min(start, datetime.datetime.strptime(first, "%Y-%m-%dT%H:%M:%SZ")
                        .replace(tzinfo=datetime.timezone.utc).timestamp())
        except ValueError:
            pass
    windows.append((start, end))
beside = [r["step_time_s"] for r in steps if any(a <= r["time"] <= b + 1 for a, b in windows)]
t = sorted(r["step_time_s"] for r in steps)
p90 = t[min(len(t) - 1, int(0.9 * len(t)))]
mb = statistics.median(beside) if beside else float("nan")
print(f"{statistics.median(t):.5f} {p90:.5f} {len(beside)} {len(windows)} {mb:.5f}")
PY
}

printf '%-22s %12s %12s %14s %6s %16s\n' run "median step" "p90 step" "steps beside" evals \
  "median beside"
ms() { echo "$1*1000" | bc -l; }
for ((i = 1; i <= repeat; i++)); do
  read -r m0 p0 b0 e0 x0 < <(one_run 0)
  read -r m1 p1 b1 e1 x1 < <(one_run 1)
  printf '%-22s %10.2fms %10.2fms %14s %6s %16s\n' "without eval jobs" "$(ms "$m0")" "$(ms "$p0")" \
    "$b0" "$e0" -
  printf '%-22s %10.2fms %10.2fms %14s %6s %14.2fms\n' "with eval jobs" "$(ms "$m1")" "$(ms "$p1")" \
    "$b1" "$e1" "$(ms "$x1")"
  printf 'ratio with/without: median %.3f, p90 %.3f; steps beside an eval job / median without %.3f\n' \
    "$(echo "$m1/$m0" | bc -l)" "$(echo "$p1/$p0" | bc -l)" "$(echo "$x1/$m0" | bc -l)"
done
bench_machine_load
