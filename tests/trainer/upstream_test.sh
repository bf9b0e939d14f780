#!/usr/bin/env bash
# Upstream LingBot-VA compatibility, end to end (docs/upstream.md): a tiny upstream-layout
# checkpoint (2 bf16 shards + index, Wan2.2's extra patch_embedding.*) made by
# tests/upstream/upstream_fixture.py; `baton-train forward` against an independent float64
# transcription of upstream's forward; init -> export -> re-init with identical outputs; the
# exported folders' keys, shapes and config keys read back by a small Python safetensors reader;
# the frozen action text projection; sharding; bf16 export with exact resume (also once the init
# folder is gone); --step0; text
# dropout's empty prompt; `ckpt upgrade`; and the 65/78 refusals naming key and file.
# usage: upstream_test.sh BATON_TRAIN [BATON]
source "$(dirname "$0")/common.sh"
baton=${2:-}
src=$(cd "$(dirname "$0")/../.." && pwd)
PY=${BATON_PYTHON:-/usr/bin/python3}
"$PY" -c "import torch" 2>/dev/null || fail "$PY cannot import torch: install python3-torch (scripts/setup.sh)"
fx() { "$PY" "$src/tests/upstream/upstream_fixture.py" "$@"; }
ok() { checks=$((checks + 1)); echo "ok: $*"; }

# ---- 1. The fixture through `forward`, against upstream's forward in float64. ----------------
fx checkpoint "$tmp/up"
[ -f "$tmp/up/transformer/diffusion_pytorch_model-00002-of-00002.safetensors" ] || fail "fixture has no 2 shards"
for case in "1 1 3" "2 3 4" "1 0 2"; do
  read -r chunk window frames <<<"$case"
  fx inputs "$tmp/up" "$tmp/in.safetensors" --chunk "$chunk" --window "$window" --frames "$frames"
  fx reference "$tmp/up" "$tmp/in.safetensors" "$tmp/ref.safetensors"
  expect_exit 0 "$bt" forward --init-from "$tmp/up" --inputs "$tmp/in.safetensors" \
    --out "$tmp/out64.safetensors" --dtype float64
  expect_exit 0 "$bt" tensor-diff "$tmp/out64.safetensors" "$tmp/ref.safetensors" --max-rel 1e-9
  expect_exit 0 "$bt" forward --init-from "$tmp/up/transformer" --inputs "$tmp/in.safetensors" \
    --out "$tmp/out32.safetensors"
  expect_exit 0 "$bt" tensor-diff "$tmp/out32.safetensors" "$tmp/ref.safetensors" --max-rel 1e-4
done
# The last inputs (chunk 1, window 0) stay for the round trip below.
cp "$tmp/out64.safetensors" "$tmp/fixture_out.safetensors"

# One file instead of shards, fp16 and fp32, no patch_embedding.*: the same reader.
for dt in fp16 fp32; do
  fx checkpoint "$tmp/up_$dt" --shards 1 --dtype "$dt" --no-patch-embedding --seed 4
  fx reference "$tmp/up_$dt" "$tmp/in.safetensors" "$tmp/ref_$dt.safetensors"
  expect_exit 0 "$bt" forward --init-from "$tmp/up_$dt" --inputs "$tmp/in.safetensors" \
    --out "$tmp/o.safetensors" --dtype float64
  expect_exit 0 "$bt" tensor-diff "$tmp/o.safetensors" "$tmp/ref_$dt.safetensors" --max-rel 1e-9
done

# ---- 2. What is refused, naming the key and the file. -------------------------------------------
fx inputs "$tmp/up" "$tmp/bad_in.safetensors" --drop noisy_actions
expect_exit 65 "$bt" forward --init-from "$tmp/up" --inputs "$tmp/bad_in.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "'noisy_actions' is missing"
fx inputs "$tmp/up" "$tmp/bad_in.safetensors" --reshape text_emb
expect_exit 65 "$bt" forward --init-from "$tmp/up" --inputs "$tmp/bad_in.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "'text_emb' has shape [7, 17]"

fx checkpoint "$tmp/bad_drop" --drop blocks.1.attn2.norm_k.weight
expect_exit 65 "$bt" forward --init-from "$tmp/bad_drop" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "diffusion_pytorch_model.safetensors.index.json: tensor 'blocks.1.attn2.norm_k.weight' is missing"
fx checkpoint "$tmp/bad_shape" --reshape proj_out.bias
expect_exit 65 "$bt" forward --init-from "$tmp/bad_shape" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "of-00002.safetensors: tensor 'proj_out.bias' has shape [17]"
fx checkpoint "$tmp/bad_extra" --extra blocks.0.attn1.rotary.weight
expect_exit 65 "$bt" forward --init-from "$tmp/bad_extra" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "unexpected tensor 'blocks.0.attn1.rotary.weight'"
fx checkpoint "$tmp/bad_hd" --heads 3 --head-dim 16
expect_exit 65 "$bt" forward --init-from "$tmp/bad_hd" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "attention_head_dim 16 is 4 mod 6"
expect_exit 78 "$bt" forward --init-from "$tmp/nowhere" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors"

# ---- 3. Training from it: init -> export -> re-init, bit for bit. ------------------------------
"$bt" synth-data --out "$tmp/ds" --episodes 8 --seed 3 --frames 2:4 --height 4 --width 4 \
  --channels 4 --action-dim 8 --action-steps 3 --text-len 6 --text-dim 16 >/dev/null
[ -f "$tmp/ds/meta/empty_text.safetensors" ] || fail "synth-data wrote no meta/empty_text.safetensors"
ok "synth-data writes meta/empty_text.safetensors"

# up_config FILE RUN_DIR STEPS LR WARMUP [yaml lines...]: sizes come from the init folder.
up_config() {
  local file=$1 dir=$2 steps=$3 lr=$4 warmup=$5; shift 5
  {
    echo "run: {name: u, dir: $dir, steps: $steps, seed: 11}"
    echo "data: {path: $tmp/ds, batch_size: 2, pad_multiple: 2, pool_factor: 2}"
    echo "optim: {lr: $lr, warmup_steps: $warmup, grad_accum: 1}"
    echo "train: {dtype: float32, log_every: 100}"
    for line in "$@"; do echo "$line"; done
  } >"$file"
}
# The first step of a warmup runs at LR 0: the checkpoint after it holds the init weights.
up_config "$tmp/a.yaml" "$tmp/a" 1 1.0e-3 5 "model: {init_from: $tmp/up}" \
  "checkpoint: {every: 100, keep_last: 3, export_dtype: bf16}"
expect_exit 0 "$bt" train --config "$tmp/a.yaml"
ck=$tmp/a/checkpoints/checkpoint_step_1
expect_exit 0 "$PY" "$src/tests/upstream/upstream_fixture.py" check-export "$ck" --dtype bf16 --like "$tmp/up"
[ -f "$ck/master_weights.safetensors" ] || fail "bf16 export without master_weights.safetensors"
ok "a bf16 export keeps the fp32 master weights beside it"
grep -q "\"init_from\":\"$tmp/up/transformer\"" "$(events_file "$tmp/a" local 0)" || fail "segment_start lacks init_from"
ok "segment_start names the init folder"
expect_exit 0 "$bt" forward --init-from "$ck" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors" --dtype float64
expect_exit 0 "$bt" tensor-diff "$tmp/o.safetensors" "$tmp/fixture_out.safetensors" --max-rel 0
# Re-init from the exported checkpoint (any folder name): again the same weights.
up_config "$tmp/b.yaml" "$tmp/b" 1 1.0e-3 5 "checkpoint: {every: 100, keep_last: 3, export_dtype: bf16}"
expect_exit 0 "$bt" train --config "$tmp/b.yaml" --init-from "$ck"
expect_exit 0 "$PY" "$src/tests/upstream/upstream_fixture.py" check-export "$tmp/b/checkpoints/checkpoint_step_1" \
  --dtype bf16 --like "$tmp/up"

# A model: key that disagrees with config.json is exit 78 naming it and both values.
up_config "$tmp/c.yaml" "$tmp/c" 1 1.0e-3 5 "model: {init_from: $tmp/up, dim: 64, layers: 2}"
expect_exit 78 "$bt" train --config "$tmp/c.yaml"
expect_in "$err" "model.dim: 64 (run config) vs 48 (num_attention_heads x attention_head_dim)"
up_config "$tmp/c.yaml" "$tmp/c" 1 1.0e-3 5 "model: {init_from: $tmp/bad_drop}"
expect_exit 65 "$bt" train --config "$tmp/c.yaml"
expect_in "$err" "tensor 'blocks.1.attn2.norm_k.weight' is missing"

# ---- 4. Training: sharded fp32 export, the frozen action text projection, exact resume. -------
up_config "$tmp/d.yaml" "$tmp/d" 3 1.0e-2 0 "model: {init_from: $tmp/up}" \
  "checkpoint: {every: 100, keep_last: 3, export_dtype: fp32, max_shard_bytes: 40000}"
expect_exit 0 "$bt" train --config "$tmp/d.yaml"
ck=$tmp/d/checkpoints/checkpoint_step_3
expect_exit 0 "$PY" "$src/tests/upstream/upstream_fixture.py" check-export "$ck" --shards 3 --dtype fp32 \
  --like "$tmp/up" --same condition_embedder_action.text_embedder. --changed
"$PY" - "$ck/optimizer.safetensors" <<PY || fail "optimizer state of the frozen tensors"
import sys; sys.path.insert(0, "$src/tests/upstream"); import st
keys = st.read(sys.argv[1])[0]
bad = [k for k in keys if "condition_embedder_action.text_embedder" in k]
assert not bad and any("condition_embedder_action.time_proj" in k for k in keys), bad
PY
ok "AdamW holds no state for condition_embedder_action.text_embedder"
expect_exit 0 "$bt" ckpt verify "$ck"
[ ! -f "$ck/master_weights.safetensors" ] || fail "fp32 export of an fp32 run wrote master weights"

# bf16 export, exact resume: 2 + 2 steps equal 4, master weights and AdamW state bit for bit.
for run in full cut; do
  up_config "$tmp/$run.yaml" "$tmp/$run" 4 1.0e-2 0 "model: {init_from: $tmp/up}" \
    "checkpoint: {every: 100, keep_last: 3, export_dtype: bf16}"
done
expect_exit 0 "$bt" train --config "$tmp/full.yaml"
expect_exit 75 "$bt" train --config "$tmp/cut.yaml" --stop-after 2
expect_exit 0 "$bt" train --config "$tmp/cut.yaml"
grep -q '"mode":"exact"' "$(events_file "$tmp/cut" local 0)" || fail "the second segment was not an exact resume"
for f in master_weights.safetensors optimizer.safetensors transformer/diffusion_pytorch_model.safetensors; do
  expect_exit 0 "$bt" tensor-diff "$tmp/full/checkpoints/checkpoint_step_4/$f" \
    "$tmp/cut/checkpoints/checkpoint_step_4/$f" --bitwise
done

# A requeued run needs only its own checkpoint: with the init folder gone (moved or purged) after
# a preemption, the resume takes the sizes from checkpoint_step_2/transformer/config.json and
# ends bit for bit where the uninterrupted run does.
cp -r "$tmp/up" "$tmp/up_gone"
up_config "$tmp/gone.yaml" "$tmp/gone" 4 1.0e-2 0 "model: {init_from: $tmp/up_gone}" \
  "checkpoint: {every: 100, keep_last: 3, export_dtype: bf16}"
expect_exit 75 "$bt" train --config "$tmp/gone.yaml" --stop-after 2
rm -rf "$tmp/up_gone"
expect_exit 0 "$bt" train --config "$tmp/gone.yaml"
[ "$(grep -c '"mode":"exact"' "$(events_file "$tmp/gone" local 0)")" -eq 1 ] || fail "the resume was not exact"
for f in master_weights.safetensors optimizer.safetensors transformer/diffusion_pytorch_model.safetensors; do
  expect_exit 0 "$bt" tensor-diff "$tmp/full/checkpoints/checkpoint_step_4/$f" \
    "$tmp/gone/checkpoints/checkpoint_step_4/$f" --bitwise
done
ok "the resume after the init folder was removed is exact"
# A fresh start still needs the folder: 78 naming it.
expect_exit 78 "$bt" train --config "$tmp/gone.yaml" --run-dir "$tmp/gone_fresh"
expect_in "$err" "$tmp/up_gone: neither $tmp/up_gone/config.json nor"

# ---- 5. --step0 N --resume-warmup K continues an upstream run's LR curve. ----------------------
up_config "$tmp/e.yaml" "$tmp/e" 12 1.0e-3 5 "model: {init_from: $tmp/up}"
expect_exit 0 "$bt" train --config "$tmp/e.yaml" --step0 10 --resume-warmup 4
"$PY" - "$(events_file "$tmp/e" local 0)" <<'PY' || fail "LR after --step0 10 --resume-warmup 4"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
start = [r for r in rows if r["type"] == "segment_start"][0]
lrs = {r["step"]: r["lr"] for r in rows if r["type"] == "step"}
assert start["step0"] == 10 and start["init_from"], start
assert sorted(lrs) == [10, 11], lrs
assert abs(lrs[10] - 1e-3 / 4) < 1e-15 and abs(lrs[11] - 1e-3 / 2) < 1e-15, lrs
PY
ok "--step0 10 --resume-warmup 4: steps 11-12 at LR 2.5e-4, 5e-4"
expect_exit 78 "$bt" train --config "$tmp/b.yaml" --run-dir "$tmp/f" --step0 3
expect_in "$err" "--step0 continues an upstream run and needs --init-from"

# ---- 6. Text dropout needs the dataset's empty prompt. -----------------------------------------
cp -r "$tmp/ds" "$tmp/ds_noempty"
rm "$tmp/ds_noempty/meta/empty_text.safetensors"
up_config "$tmp/g.yaml" "$tmp/g" 1 1.0e-3 5 "model: {init_from: $tmp/up}"
sed -i "s|$tmp/ds,|$tmp/ds_noempty,|" "$tmp/g.yaml"
expect_exit 65 "$bt" train --config "$tmp/g.yaml"
expect_in "$err" "ds_noempty/meta/empty_text.safetensors: missing"
echo "objective: {text_dropout: 0}" >>"$tmp/g.yaml"
expect_exit 0 "$bt" train --config "$tmp/g.yaml"

# ---- 7. `baton submit` / validate accept model.init_from; the frozen config keeps given keys. -
if [ -n "$baton" ]; then
  up_config "$tmp/h.yaml" "$tmp/h" 1 1.0e-3 5 "model: {init_from: $tmp/up, layers: 2}"
  expect_exit 0 "$baton" validate "$tmp/h.yaml" --print
  expect_in "$out" "init_from: $tmp/up"
  case "$out" in *"dim: 64"*) fail "frozen config invents model.dim" ;; esac
  ok "validate --print keeps only the model keys the file sets"
  up_config "$tmp/h.yaml" "$tmp/h" 1 1.0e-3 5 "model: {init_from: $tmp/nowhere}"
  expect_exit 78 "$baton" validate "$tmp/h.yaml"
  expect_in "$err" "model.init_from: no such folder"

  # ---- 8. A version-1 checkpoint: a clear message, then `ckpt upgrade`. ------------------------
  v1=$tmp/v1/checkpoints/checkpoint_step_1
  fx write-v1 "$tmp/up" "$v1" --template "$tmp/a/checkpoints/checkpoint_step_1"
  "$baton" manifest write "$v1" --step 1 >/dev/null
  "$PY" -c "import json,sys; p=sys.argv[1]; m=json.load(open(p)); m['format_version']=1; json.dump(m, open(p,'w'))" "$v1/MANIFEST.json"
  expect_exit 65 "$bt" ckpt verify "$v1"
  expect_in "$err" "baton-train ckpt upgrade"
  # --resume auto refuses it (skipping it would start the run over).
  up_config "$tmp/v1.yaml" "$tmp/v1" 2 1.0e-3 5 \
    "model: {dim: 48, heads: 2, layers: 2, ffn_dim: 96, freq_dim: 32}"
  expect_exit 65 "$bt" train --config "$tmp/v1.yaml"
  expect_in "$err" "convert it with \`baton-train ckpt upgrade"
  expect_exit 0 "$bt" ckpt upgrade "$v1"
  expect_in "$out" "copies of the shared layers"
  expect_exit 0 "$bt" ckpt verify "$v1"
  [ -d "$v1.v1" ] || fail "the version-1 folder was not kept"
  "$PY" - "$v1" "$tmp/up" <<PY || fail "upgraded weights"
import sys; sys.path.insert(0, "$src/tests/upstream"); import upstream_fixture as f, st
_, new = f.load_folder(sys.argv[1]); _, up = f.load_folder(sys.argv[2])
for k, v in new.items():
    src = k.replace("condition_embedder_action.time_proj", "condition_embedder.time_proj") \
           .replace("condition_embedder_action.text_embedder", "condition_embedder.text_embedder")
    assert v.float().equal(up[src].float()), k
opt = st.read(sys.argv[1] + "/optimizer.safetensors")[0]
assert "exp_avg.condition_embedder_action.time_proj.weight" in opt
assert not [k for k in opt if "condition_embedder_action.text_embedder" in k]
PY
  ok "ckpt upgrade: names, reshapes, proj_out rows, the action time projection copied"
  expect_exit 0 "$bt" train --config "$tmp/v1.yaml"
  grep -q '"mode":"exact"' "$(events_file "$tmp/v1" local 0)" || fail "the upgraded checkpoint was not resumed exactly"
  ok "the upgraded checkpoint resumes exactly"
fi

echo "upstream_test: $checks checks passed"
