#!/usr/bin/env bash
# `baton submit` and the memory plan: a run whose plan (baton-train plan-memory) exceeds
# slurm.mem_per_task_gb (cpu) or slurm.gpu_memory_gb (cuda) is refused with exit 78 naming the
# key, the limit, the planned total and its categories, and leaves no run row and no run folder;
# a run that fits is accepted and asks SLURM for its memory (--mem-per-cpu); with the key set
# and no trainer to ask, submit refuses (exit 69) instead of skipping the check.
# With --cluster (the dev cluster must be up, else exit 2) the fitting run is submitted for real
# and SLURM must accept its memory request.
# usage: submit_memory_test.sh BATON BATON_TRAIN [--cluster]
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/../lib/slurm.sh"
baton=$1
export BATON_TRAIN_BIN=$(realpath "$2")  # the job runs in the run folder
cluster=${3:-}
export BATON_HOME=$tmp/home
export BATON_SLURM_TIMEOUT_S=30
[ -z "$cluster" ] || require_cluster_up

no_runs() { # nothing in the database, no run folders
  if [ -e "$BATON_HOME/baton.db" ]; then
    expect_exit 0 "$baton" ls --json --no-sync
    [ "$(printf '%s' "$out" | tr -d ' \n')" = "[]" ] || fail "runs were recorded: $out"
  fi
  [ -z "$(ls -A "$BATON_HOME/runs" 2>/dev/null)" ] || fail "run folders left: $(ls "$BATON_HOME/runs")"
  checks=$((checks + 1))
}

"$BATON_TRAIN_BIN" synth-data --out "$tmp/ds" --episodes 4 --seed 7 --frames 4:6 --height 4 \
  --width 4 --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null
# config FILE DEVICE KEY GB
config() {
  cat >"$1" <<YAML
run: {name: mem, steps: 2}
slurm: {cpus_per_task: 2, time: "00:05:00", $3: $4}
data: {path: ds, batch_size: 2, pad_multiple: 2}
model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}
train: {device: $2}
YAML
}

# Too little CPU memory per task: refused, naming the figures.
config "$tmp/small.yaml" cpu mem_per_task_gb 0.01
expect_exit 78 "$baton" submit "$tmp/small.yaml"
for word in "slurm.mem_per_task_gb" "memory plan needs" "per rank" "0.01 GiB" "weights" \
  "gradients" "optimizer state" "activations (none)" "runtime" "optim.shard none" \
  "baton-train plan-memory --config"; do
  expect_in "$err" "$word"
done
no_runs
expect_exit 78 "$baton" submit "$tmp/small.yaml" --dry-run
expect_in "$err" "slurm.mem_per_task_gb"
# The refusal's total is the plan's own. The measured runtime term differs between two processes
# (a few MiB under load), so the total less that term is compared, to the message's 0.1 MiB print.
expect_exit 0 "$BATON_TRAIN_BIN" plan-memory --config "$tmp/small.yaml" --world-size 1 --json
plan=$out
expect_exit 78 "$baton" submit "$tmp/small.yaml"
/usr/bin/python3 - "$plan" "$err" <<'PY' || fail "the refusal's total is not the plan's: $err"
import json, re, sys
b = json.loads(sys.argv[1])["bytes"]
mib = lambda v, unit: float(v) * (2**30 if unit == "GiB" else 2**20)
said = mib(*re.search(r"needs ([0-9.]+) (GiB|MiB) per rank", sys.argv[2]).groups())
runtime = mib(*re.search(r"runtime ([0-9.]+) (GiB|MiB)", sys.argv[2]).groups())
sys.exit(0 if abs((said - runtime) - (b["total"] - b["runtime"])) <= 0.2 * 2**20 else 1)
PY
checks=$((checks + 1))

# A cuda run is held to slurm.gpu_memory_gb (planned on this CPU-only machine all the same).
config "$tmp/gpu.yaml" cuda gpu_memory_gb 0.01
expect_exit 78 "$baton" submit "$tmp/gpu.yaml" --dry-run
expect_in "$err" "slurm.gpu_memory_gb"
expect_in "$err" "runtime 1.00 GiB"
config "$tmp/gpu_ok.yaml" cuda gpu_memory_gb 80
expect_exit 0 "$baton" submit "$tmp/gpu_ok.yaml" --dry-run

# Enough memory: accepted, and SLURM is asked for it (2 GiB over 2 CPUs = 1024 MiB each).
config "$tmp/fits.yaml" cpu mem_per_task_gb 2
expect_exit 0 "$baton" submit "$tmp/fits.yaml" --dry-run
expect_in "$out" "#SBATCH --mem-per-cpu=1024M"
config "$tmp/nolimit.yaml" cpu mem_per_task_gb 0
expect_exit 0 "$baton" submit "$tmp/nolimit.yaml" --dry-run
case "$out" in *"--mem-per-cpu"*) fail "a run without mem_per_task_gb asks SLURM for memory" ;; esac

# No trainer to ask: refused rather than passed unchecked; without a limit nothing is asked.
BATON_TRAIN_BIN=$tmp/no-such-trainer expect_exit 69 "$baton" submit "$tmp/fits.yaml" --dry-run
expect_in "$err" "BATON_TRAIN_BIN"
expect_in "$err" "mem_per_task_gb: 0"
BATON_TRAIN_BIN=$tmp/no-such-trainer expect_exit 0 "$baton" submit "$tmp/nolimit.yaml" --dry-run
no_runs

if [ -n "$cluster" ]; then
  # The dev cluster accepts the memory request and the run starts.
  expect_exit 0 "$baton" submit "$tmp/fits.yaml" --json
  job=$(/usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])['job_id'])" "$out")
  trap 'scancel "$job" 2>/dev/null || true; rm -rf "$tmp"' EXIT
  mem=$(job_field "$job" MinMemoryCPU)
  [ "$mem" = "1G" ] || [ "$mem" = "1024M" ] || fail "job $job asks for MinMemoryCPU=$mem"
  checks=$((checks + 1))
  echo "ok: SLURM job $job holds MinMemoryCPU=$mem"
  # The run is two steps of a tiny model: it must complete under its memory request.
  job_done() { case "$(job_field "$job" JobState)" in COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | "") return 0 ;; *) return 1 ;; esac; }
  wait_for 180 "job $job to finish" job_done
  state=$(job_field "$job" JobState)
  [ "$state" = COMPLETED ] ||
    fail "job $job ended $state: $(cat "$BATON_HOME"/runs/*/logs/*.out 2>/dev/null | tail -20)"
  checks=$((checks + 1))
  echo "ok: job $job completed under --mem-per-cpu"
fi

echo "submit_memory_test: $checks checks passed"
