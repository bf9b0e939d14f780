#!/usr/bin/env bash
# `baton-train plan-memory` against the measured peak: for small models on CPU (float32, float64
# and bfloat16, activation_checkpointing none, blocks and blocks+attention, widths 96-256, one
# rank and two over Gloo, the master replicated and sharded) the planned total per rank must be within +-20 % of the peak resident
# memory a short real training run reports (train.profile). A control shows the check can fail:
# the same plan without its activations is outside the band.
# Also: the text and JSON outputs agree, --frames plans without a dataset, bad usage is refused.
# usage: memory_plan_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"

tolerance=0.20

"$bt" synth-data --out "$tmp/ds8" --episodes 8 --seed 7 --frames 8:8 --height 8 --width 8 \
  --channels 4 --action-dim 8 --action-steps 4 --text-len 16 --text-dim 32 >/dev/null
"$bt" synth-data --out "$tmp/ds16" --episodes 4 --seed 7 --frames 16:16 --height 8 --width 8 \
  --channels 4 --action-dim 8 --action-steps 4 --text-len 16 --text-dim 32 >/dev/null
"$bt" synth-data --out "$tmp/ds12" --episodes 4 --seed 7 --frames 12:12 --height 8 --width 12 \
  --channels 4 --action-dim 6 --action-steps 4 --text-len 8 --text-dim 24 >/dev/null

# config NAME DATASET BATCH DTYPE DIM HEADS LAYERS FFN CHECKPOINTING
config() {
  cat >"$tmp/$1.yaml" <<YAML
run: {name: $1, dir: $tmp/run-$1, steps: 2, seed: 3}
data: {path: $tmp/$2, batch_size: $3, pad_multiple: 4}
model: {dim: $5, heads: $6, layers: $7, ffn_dim: $8, freq_dim: 64}
optim: {warmup_steps: 1}
train: {dtype: $4, profile: 2, log_every: 1, activation_checkpointing: $9}
YAML
}
config f32-none ds8 4 float32 128 4 4 512 none
config f32-blocks ds8 4 float32 128 4 6 512 blocks
config f64-none ds12 2 float64 96 4 3 384 none
config bf16-none ds8 4 bfloat16 128 4 4 512 none
config f32-wide ds16 4 float32 256 4 3 1024 none
config f32-battn ds16 4 float32 128 4 6 512 blocks+attention

json_field() { # json_field JSON PYTHON-EXPR (j is the parsed object)
  /usr/bin/python3 -c "import json,sys; j=json.loads(sys.argv[1]); print($2)" "$1"
}

printf '%-12s %14s %14s %8s\n' config planned measured ratio >"$tmp/table"
cp "$tmp/f32-none.yaml" "$tmp/f32-2ranks.yaml"
sed -i "s/batch_size: 4/batch_size: 2/; s|run-f32-none|run-f32-2ranks|" "$tmp/f32-2ranks.yaml"
# The same on 2 ranks with the AdamW state sharded (optim.shard: gradients).
sed -e "s|run-f32-2ranks|run-f32-2shard|; s/optim: {warmup_steps: 1}/optim: {warmup_steps: 1, shard: gradients}/" \
  "$tmp/f32-2ranks.yaml" >"$tmp/f32-2shard.yaml"
# And with the fp32 master sharded beside AdamW (optim.master: sharded), float32 and bf16 (whose
# ranks then hold bf16 compute copies instead of a replicated master and autocast's casts).
sed -e "s|run-f32-2ranks|run-f32-2master|; s/optim: {warmup_steps: 1}/optim: {warmup_steps: 1, shard: optimizer, master: sharded}/" \
  "$tmp/f32-2ranks.yaml" >"$tmp/f32-2master.yaml"
sed -e "s|run-f32-2master|run-bf16-2master|; s/dtype: float32/dtype: bfloat16/" \
  "$tmp/f32-2master.yaml" >"$tmp/bf16-2master.yaml"
grep -q "dtype: bfloat16" "$tmp/bf16-2master.yaml" || fail "bf16-2master: no bfloat16 in its config"
for name in f32-none f32-blocks f64-none bf16-none f32-wide f32-battn f32-2ranks f32-2shard \
  f32-2master bf16-2master; do
  world=1
  case $name in f32-2ranks | f32-2shard | f32-2master | bf16-2master) world=2 ;; esac
  plan=$("$bt" plan-memory --config "$tmp/$name.yaml" --world-size $world --json)
  planned=$(json_field "$plan" 'j["bytes"]["total"]')
  row_part=$(json_field "$plan" 'j["bytes"]["activations"] + j["bytes"]["heap_overhead"]')
  : >"$tmp/train.log"
  train_ranks $world --config "$tmp/$name.yaml" || fail "$name: training failed: $(tail -5 "$tmp/train.log")"
  # The largest "peak N MB" of rank 0's profiled micro-steps (the second step holds AdamW state).
  measured=$(sed -n 's/^profile micro .* peak \([0-9.]*\) MB$/\1/p' "$tmp/train.log" | sort -g | tail -1)
  [ -n "$measured" ] || fail "$name: no profile line in $(cat "$tmp/train.log")"
  measured=$(/usr/bin/python3 -c "print(int(float('$measured') * 1e6))")
  ratio=$(/usr/bin/python3 -c "print('%.3f' % ($planned / $measured))")
  printf '%-12s %14d %14d %8s\n' "$name" "$planned" "$measured" "$ratio" >>"$tmp/table"
  /usr/bin/python3 -c "import sys; sys.exit(0 if abs($planned / $measured - 1) <= $tolerance else 1)" ||
    fail "$name: planned $planned B vs measured peak $measured B (ratio $ratio) is outside +-$tolerance"
  checks=$((checks + 1))
  echo "ok: $name planned $planned B, measured $measured B (ratio $ratio)"
  # Control: the same plan without what the row costs (activations and their heap overhead)
  # misses by more than the band, so the check tells a plan that ignores the row from this one.
  /usr/bin/python3 -c "import sys; sys.exit(0 if abs(($planned - $row_part) / $measured - 1) > $tolerance else 1)" ||
    fail "$name: the check cannot tell a plan without its activations from the real one"
  checks=$((checks + 1))
done
cat "$tmp/table"

# Checkpointing lowers the planned activations, and the text output names the same total.
plan=$("$bt" plan-memory --config "$tmp/f32-none.yaml" --json --runtime-mb 100)
[ "$(json_field "$plan" 'int(j["activations"]["blocks"] < j["activations"]["none"])')" = 1 ] ||
  fail "blocks does not lower the activations"
[ "$(json_field "$plan" 'int(j["activations"]["blocks+attention"] < j["activations"]["none"])')" = 1 ] ||
  fail "blocks+attention does not lower the activations"
total=$(json_field "$plan" 'j["bytes"]["total"]')
expect_exit 0 "$bt" plan-memory --config "$tmp/f32-none.yaml" --runtime-mb 100
expect_in "$out" "total per rank"
expect_in "$out" "$total B"

# Without a dataset: --frames states the row; the sizes come from the flags.
printf 'run: {name: x, steps: 1}\ndata: {path: %s/nowhere}\nmodel: {dim: 48, heads: 2, layers: 2, ffn_dim: 96}\n' \
  "$tmp" >"$tmp/nodata.yaml"
expect_exit 78 "$bt" plan-memory --config "$tmp/nodata.yaml" --runtime-mb 0
expect_in "$err" "data.path"
expect_exit 0 "$bt" plan-memory --config "$tmp/nodata.yaml" --json --runtime-mb 0 --frames 6 \
  --height 4 --width 4 --action-steps 2 --text-len 3 --channels 2 --action-dim 4 --text-dim 8
[ "$(json_field "$out" 'j["row"]["tokens"]')" = $((2 * 4 * 8 * (4 + 2))) ] || fail "row tokens: $out"
checks=$((checks + 1))
expect_exit 78 "$bt" plan-memory --config "$tmp/nodata.yaml" --runtime-mb 0 --frames 6 --height 4 \
  --width 4 --action-steps 2 --text-len 3
expect_in "$err" "--channels"
expect_exit 64 "$bt" plan-memory --config "$tmp/nodata.yaml" --frames 6

# --init-from: only config.json is read; its sizes give the same plan as the same sizes stated.
mkdir -p "$tmp/init/transformer"
cat >"$tmp/init/transformer/config.json" <<'JSON'
{"_class_name": "WanTransformer3DModel", "patch_size": [1, 2, 2], "num_attention_heads": 2,
 "attention_head_dim": 24, "in_channels": 2, "out_channels": 2, "action_dim": 4, "text_dim": 8,
 "freq_dim": 32, "ffn_dim": 96, "num_layers": 2, "cross_attn_norm": true, "eps": 1e-06}
JSON
printf 'run: {name: x, steps: 1}\ndata: {path: %s/nowhere}\n' "$tmp" >"$tmp/init.yaml"
row="--frames 6 --height 4 --width 4 --action-steps 2 --text-len 3 --runtime-mb 0 --json"
# shellcheck disable=SC2086
expect_exit 0 "$bt" plan-memory --config "$tmp/init.yaml" --init-from "$tmp/init" $row
from_init=$out
printf 'run: {name: x, steps: 1}\ndata: {path: %s/nowhere}\nmodel: {dim: 48, heads: 2, layers: 2, ffn_dim: 96, freq_dim: 32}\n' \
  "$tmp" >"$tmp/stated.yaml"
# shellcheck disable=SC2086
expect_exit 0 "$bt" plan-memory --config "$tmp/stated.yaml" $row --channels 2 --action-dim 4 --text-dim 8
[ "$(json_field "$from_init" 'j["bytes"]')" = "$(json_field "$out" 'j["bytes"]')" ] ||
  fail "--init-from and the stated sizes plan differently: $from_init vs $out"
checks=$((checks + 1))
# A model: key that disagrees with config.json is the trainer's usual 78.
printf 'run: {name: x, steps: 1}\ndata: {path: %s/nowhere}\nmodel: {dim: 60, heads: 2}\n' "$tmp" >"$tmp/other.yaml"
# shellcheck disable=SC2086
expect_exit 78 "$bt" plan-memory --config "$tmp/other.yaml" --init-from "$tmp/init" $row
expect_in "$err" "model.dim: 60 (run config) vs 48"

echo "memory_plan_test: $checks checks passed"
