#!/usr/bin/env bash
# `baton-train plan-memory` (and `baton submit`, which runs it) against sizes that overflow or
# would make the plan itself huge: each is a named error with its exit code, at once — flags 64,
# config.json of the upstream folder and the dataset 65, run config keys 78 — never a crash, a
# hang or a negative total that "fits".
# usage: plan_memory_bounds_test.sh BATON BATON_TRAIN
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
train=$2
export BATON_HOME=$tmp/home
export BATON_TRAIN_BIN=$(realpath "$train")

# expect_quick SECONDS CODE CMD...: expect_exit, and it took at most SECONDS.
expect_quick() {
  local limit=$1 start=$SECONDS
  shift
  expect_exit "$@"
  ((SECONDS - start <= limit)) || fail "'${*:2}' took $((SECONDS - start)) s (limit $limit s)"
}

"$train" synth-data --out "$tmp/ds" --episodes 3 --seed 7 --frames 4:6 --height 4 --width 4 \
  --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null
cat >"$tmp/run.yaml" <<YAML
run: {name: bounds, steps: 2}
slurm: {cpus_per_task: 1, time: "00:05:00", mem_per_task_gb: 4}
data: {path: ds, batch_size: 2, pad_multiple: 2}
model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}
YAML
row=(--runtime-mb 100 --action-steps 2 --text-len 2 --channels 2 --action-dim 4 --text-dim 8)

# The plan as it should be: fits, a positive total.
expect_exit 0 "$train" plan-memory --config "$tmp/run.yaml" --json --runtime-mb 100
[[ $(jq -r .fits <<<"$out") == true && $(jq -r '.bytes.total > 0' <<<"$out") == true ]] ||
  fail "the plain plan: $out"

# Flags: 2^31 x 2^31 latents (was SIGSEGV), a row too large to plan (was GBs and minutes).
expect_quick 10 64 "$train" plan-memory --config "$tmp/run.yaml" --frames 4 --height 2147483648 \
  --width 2147483648 "${row[@]}"
expect_in "$err" "--height is 2147483648, outside [1, 65536]"
expect_quick 10 64 "$train" plan-memory --config "$tmp/run.yaml" --frames 100000 --height 512 \
  --width 512 "${row[@]}"
expect_in "$err" "too large to plan"
expect_quick 10 64 "$train" plan-memory --config "$tmp/run.yaml" --world-size -3 --json
expect_in "$err" "--world-size"

# config.json of the upstream folder (--init-from reads only it): a head size whose total went
# negative and "fits": true, heads 1e9 (double free), num_layers 1e8 (hang).
upstream() { mkdir -p "$tmp/up/transformer" && printf '%s\n' "$1" >"$tmp/up/transformer/config.json"; }
for bad in '{"attention_head_dim": 3000000000}|attention_head_dim' \
  '{"num_attention_heads": 1000000000}|num_attention_heads' \
  '{"num_layers": 100000000}|num_layers'; do
  upstream "${bad%%|*}"
  expect_quick 10 65 "$train" plan-memory --config "$tmp/run.yaml" --init-from "$tmp/up" \
    --frames 4 --height 4 --width 4 "${row[@]}" --json
  expect_in "$err" "config.json: ${bad#*|} "
done

# A dataset whose episode lies about its length (n_video): its file says otherwise (65, naming
# the episode) before any row of that length is planned (was 16.6 GB and over 60 s).
cp -r "$tmp/ds" "$tmp/liar"
python3 - "$tmp/liar/meta/episodes.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
lines[1]["n_video"] = 400001
open(sys.argv[1], "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
sed 's#path: ds#path: liar#' "$tmp/run.yaml" >"$tmp/liar.yaml"
expect_quick 10 65 "$train" plan-memory --config "$tmp/liar.yaml" --runtime-mb 100
expect_in "$err" "n_video"
python3 - "$tmp/liar/meta/episodes.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
lines[1]["n_video"] = 40000000001
open(sys.argv[1], "w").write("".join(json.dumps(l) + "\n" for l in lines))
PY
expect_quick 10 65 "$train" plan-memory --config "$tmp/liar.yaml" --runtime-mb 100
expect_in "$err" "latent frames of episode"
# ... and submit passes none of it on.
expect_quick 20 65 "$baton" submit "$tmp/liar.yaml" --dry-run
[ ! -e "$BATON_HOME/baton.db" ] || fail "a refused submit created the database"
checks=$((checks + 1))

# slurm.mem_per_task_gb 1e30 rendered --mem-per-cpu=-9223372036854775808M: now out of range.
sed 's#mem_per_task_gb: 4#mem_per_task_gb: 1e30#' "$tmp/run.yaml" >"$tmp/huge_mem.yaml"
expect_exit 78 "$baton" submit "$tmp/huge_mem.yaml" --dry-run
expect_in "$err" "slurm.mem_per_task_gb"
expect_exit 78 "$train" plan-memory --config "$tmp/huge_mem.yaml" --json --runtime-mb 100
expect_in "$err" "slurm.mem_per_task_gb"

echo "plan_memory_bounds_test: $checks checks passed"
