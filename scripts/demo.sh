#!/usr/bin/env bash
# The main job, end to end on this machine: set-up, build, a synthetic dataset, and the trainer's
# data pipeline on it (config validation, sampler statistics, one epoch through the loader).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bin=build
data=out/demo-data

echo "== synthetic dataset (256 episodes, F 103..362) -> $data"
if [ ! -f "$data/meta/episodes.jsonl" ]; then
  "$bin/trainer/baton-train" synth-data --out "$data" --episodes 256 --seed 0
else
  echo "already there"
fi

echo "== run config"
"$bin/orchestrator/baton" validate configs/example.yaml

echo "== sampler plan: 8 ranks, batch 4, pool 50, pad multiple 8"
for plan in global per_rank; do
  "$bin/trainer/baton-train" sampler-stats --data "$data" --batch-size 4 --world-size 8 \
    --pad-multiple 8 --pool-factor 50 --seed 0 --plan "$plan"
done

echo "== one epoch through the prefetching loader and pad-collate"
"$bin/trainer/baton-train" data-check --data "$data" --batch-size 4 --pad-multiple 8 --seed 0
