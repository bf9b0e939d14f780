#!/usr/bin/env bash
# Hostile upstream folders and version-1 checkpoints (docs/bad_input.md, "Upstream checkpoints"
# and "Checkpoints"): config.json sizes that the weights do not have are refused from the
# safetensors headers before a model of that size is allocated; an index may not point outside
# its folder nor leave a shard's tensor out; eps and _baton_rope_theta are range-checked; NaN
# weights are refused at load naming tensor and file. `ckpt upgrade` refuses what it cannot
# vouch for (a manifest without the weights, NaN state, no tensors, a trainer_state.json that is
# not JSON) with 65 and leaves nothing behind, and takes a path with a trailing slash.
# usage: upstream_refusals_test.sh BATON_TRAIN BATON
source "$(dirname "$0")/common.sh"
baton=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
PY=${BATON_PYTHON:-/usr/bin/python3}
"$PY" -c "import torch" 2>/dev/null || fail "$PY cannot import torch: install python3-torch (scripts/setup.sh)"
fx() { "$PY" "$src/tests/upstream/upstream_fixture.py" "$@"; }
ok() { checks=$((checks + 1)); echo "ok: $*"; }
# edit_json FILE PYTHON: runs PYTHON with the parsed FILE as `j`, writes it back.
edit_json() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
path, code = sys.argv[1], sys.argv[2]
j = json.load(open(path))
exec(code)
json.dump(j, open(path, "w"))
PY
}
# st_edit FILE PYTHON: runs PYTHON on FILE's tensors as `t` (a dict), writes them back.
st_edit() {
  "$PY" - "$1" "$2" "$src/tests/upstream" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
import st, torch
t, meta = st.read(sys.argv[1])
exec(sys.argv[2])
st.write(sys.argv[1], t, meta or None)
PY
}
fwd() { "$bt" forward --init-from "$1" --inputs "$tmp/in.safetensors" --out "$tmp/o.safetensors"; }

fx checkpoint "$tmp/up"
fx inputs "$tmp/up" "$tmp/in.safetensors"
expect_exit 0 fwd "$tmp/up"
T=transformer
IDX=$T/diffusion_pytorch_model.safetensors.index.json
S2=diffusion_pytorch_model-00002-of-00002.safetensors

# ---- 1. Absurd sizes in config.json: 65 naming the key, before any allocation. ---------------
# Each of these builds a model of terabytes from a 100 kB folder: the old reader allocated it
# first (exit 70 from bad_alloc, or hours for the layers).
bad_size() {  # bad_size NAME PYTHON NEEDLE
  rm -rf "$tmp/$1"; cp -r "$tmp/up" "$tmp/$1"
  edit_json "$tmp/$1/$T/config.json" "$2"
  expect_exit 65 fwd "$tmp/$1"
  expect_in "$err" "$3"
}
bad_size heads 'j["num_attention_heads"] = 1000000' \
  "config.json: num_attention_heads x attention_head_dim is 24000000 but"
expect_in "$err" "tensor 'patch_embedding_mlp.weight' has shape [48, 16]"
bad_size heads9 'j["num_attention_heads"] = 1000000000' \
  "num_attention_heads x attention_head_dim = 24000000000 exceeds 2147483647"
bad_size layers 'j["num_layers"] = 100000000' \
  "config.json: num_layers 100000000 but"
expect_in "$err" "holds 2 block(s) numbered 0..1"
bad_size ffn 'j["ffn_dim"] = 4000000000000' "ffn_dim must be an integer in [1, 2147483647], got 4000000000000"
bad_size ffn6 'j["ffn_dim"] = 1000000' "config.json: ffn_dim is 1000000 but $tmp/ffn6/$T/"
expect_in "$err" "safetensors: tensor 'blocks.0.ffn.net.0.proj.weight' has shape [96, 48]"
bad_size text 'j["text_dim"] = 50000000' "text_dim is 50000000 but"
# The trainer checks before it builds the model too.
"$bt" synth-data --out "$tmp/ds" --episodes 4 --seed 3 --frames 2:3 --height 4 --width 4 \
  --channels 4 --action-dim 8 --action-steps 3 --text-len 6 --text-dim 16 >/dev/null
cfg() {  # cfg FILE RUN_DIR [yaml lines...]
  local file=$1 dir=$2; shift 2
  {
    echo "run: {name: r, dir: $dir, steps: 2, seed: 11}"
    echo "data: {path: $tmp/ds, batch_size: 2, pad_multiple: 2, pool_factor: 2}"
    echo "optim: {lr: 1.0e-3, warmup_steps: 0, grad_accum: 1}"
    echo "train: {dtype: float32, log_every: 100}"
    echo "objective: {text_dropout: 0}"
    for line in "$@"; do echo "$line"; done
  } >"$file"
}
cfg "$tmp/heads.yaml" "$tmp/run_heads" "model: {init_from: $tmp/heads}"
expect_exit 65 "$bt" train --config "$tmp/heads.yaml"
expect_in "$err" "num_attention_heads x attention_head_dim is 24000000 but"

# ---- 2. eps and _baton_rope_theta out of range (theta 0: an all-NaN forward). -----------------
bad_size theta 'j["_baton_rope_theta"] = 0' "_baton_rope_theta must be a finite number >= 1, got 0"
bad_size theta_s 'j["_baton_rope_theta"] = "x"' "_baton_rope_theta must be a finite number >= 1"
bad_size eps 'j["eps"] = 1e308' "eps must be a number in (0, 1], got 1e+308"
bad_size eps0 'j["eps"] = 0' "eps must be a number in (0, 1], got 0"

# ---- 3. The index: confined to its folder, and agreeing with the shards. ----------------------
# A shard outside the folder, named by ../ (it holds the right tensors: the old reader used it).
rm -rf "$tmp/esc" "$tmp/outside"; cp -r "$tmp/up" "$tmp/esc"; mkdir "$tmp/outside"
mv "$tmp/esc/$T/$S2" "$tmp/outside/$S2"
edit_json "$tmp/esc/$IDX" \
  "j['weight_map'] = {k: ('../../outside/' + v if v == '$S2' else v) for k, v in j['weight_map'].items()}"
expect_exit 65 fwd "$tmp/esc"
expect_in "$err" "= \"../../outside/$S2\" is not a file inside the index's folder"
edit_json "$tmp/esc/$IDX" \
  "j['weight_map'] = {k: v.replace('../../outside/', '$tmp/outside/') for k, v in j['weight_map'].items()}"
expect_exit 65 fwd "$tmp/esc"
expect_in "$err" "= \"$tmp/outside/$S2\" is not a file inside the index's folder"
# A symlinked shard inside the folder (the Hugging Face cache's layout) is followed.
ln -s "$tmp/outside/$S2" "$tmp/esc/$T/$S2"
edit_json "$tmp/esc/$IDX" \
  "j['weight_map'] = {k: v.replace('$tmp/outside/', '') for k, v in j['weight_map'].items()}"
expect_exit 0 fwd "$tmp/esc"
# A tensor a shard holds that the index does not name (upstream's loader would drop it).
rm -rf "$tmp/hidden"; fx checkpoint "$tmp/hidden" --extra blocks.0.attn1.rotary.weight
edit_json "$tmp/hidden/$IDX" "del j['weight_map']['blocks.0.attn1.rotary.weight']"
expect_exit 65 fwd "$tmp/hidden"
expect_in "$err" "safetensors: tensor 'blocks.0.attn1.rotary.weight' is not in $tmp/hidden/$IDX"
# A tensor in two shards: shard 1's first tensor copied into shard 2 as well.
rm -rf "$tmp/twice"; cp -r "$tmp/up" "$tmp/twice"
"$PY" - "$tmp/twice/$T" "$src/tests/upstream" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import st
d = sys.argv[1] + "/diffusion_pytorch_model-0000%d-of-00002.safetensors"
one, _ = st.read(d % 1)
two, meta = st.read(d % 2)
k = sorted(one)[0]
two[k] = one[k]
st.write(d % 2, two, meta)
PY
expect_exit 65 fwd "$tmp/twice"
expect_in "$err" "$S2: tensor '"
expect_in "$err" "' is also here, but $tmp/twice/$IDX puts it in $tmp/twice/$T/diffusion_pytorch_model-00001-of-00002.safetensors"

# ---- 4. NaN or Inf weights: 65 at load, naming the tensor and the file. ----------------------
rm -rf "$tmp/nan"; fx checkpoint "$tmp/nan" --shards 1 --dtype fp32
st_edit "$tmp/nan/$T/diffusion_pytorch_model.safetensors" \
  "t['blocks.1.ffn.net.2.weight'][0, 3] = float('nan'); t['blocks.1.ffn.net.2.weight'][1, 1] = float('inf')"
expect_exit 65 fwd "$tmp/nan"
expect_in "$err" "$tmp/nan/$T/diffusion_pytorch_model.safetensors: tensor 'blocks.1.ffn.net.2.weight' holds 2 NaN/Inf value(s)"
cfg "$tmp/nan.yaml" "$tmp/run_nan" "model: {init_from: $tmp/nan}"
expect_exit 65 "$bt" train --config "$tmp/nan.yaml"
expect_in "$err" "tensor 'blocks.1.ffn.net.2.weight' holds 2 NaN/Inf value(s)"
! grep -qs '"type":"step"' "$(events_file "$tmp/run_nan" local 0)" || fail "a step ran on NaN weights"
ok "NaN weights: no step is taken"
# A float64 value beyond float32's range is as bad, in a float32 run.
rm -rf "$tmp/big"; fx checkpoint "$tmp/big" --shards 1 --dtype fp32
st_edit "$tmp/big/$T/diffusion_pytorch_model.safetensors" \
  "t['proj_out.bias'] = t['proj_out.bias'].double(); t['proj_out.bias'][2] = 1e300"
expect_exit 65 fwd "$tmp/big"
expect_in "$err" "tensor 'proj_out.bias' holds 1 NaN/Inf value(s) (in Float)"

# ---- 5. ckpt upgrade. ------------------------------------------------------------------------
cfg "$tmp/t.yaml" "$tmp/t" "model: {init_from: $tmp/up}"
expect_exit 0 "$bt" train --config "$tmp/t.yaml"
template=$tmp/t/checkpoints/checkpoint_step_2
# v1 NAME: a fresh version-1 checkpoint (valid manifest) at $tmp/NAME/checkpoint_step_1.
v1() {
  local d=$tmp/$1/checkpoint_step_1
  rm -rf "$tmp/$1"; mkdir -p "$tmp/$1"
  fx write-v1 "$tmp/up" "$d" --template "$template" >/dev/null
  edit_json "$d/trainer_state.json" "j['step'] = 1"
  "$baton" manifest write "$d" --step 1 >/dev/null
  edit_json "$d/MANIFEST.json" "j['format_version'] = 1"
  echo "$d"
}
# refused NAME NEEDLE: the upgrade exits 65 naming NEEDLE; the folder is as it was, nothing beside.
refused() {
  local d=$tmp/$1/checkpoint_step_1
  local before; before=$(cd "$tmp/$1" && find . -type f -exec sha1sum {} + | sort)
  expect_exit 65 "$bt" ckpt upgrade "$d"
  expect_in "$err" "$2"
  [ "$(cd "$tmp/$1" && find . -type f -exec sha1sum {} + | sort)" = "$before" ] ||
    fail "a refused upgrade changed $tmp/$1"
  [ "$(ls -A "$tmp/$1")" = checkpoint_step_1 ] || fail "a refused upgrade left $(ls -A "$tmp/$1")"
  ok "refused upgrade of $1 left the folder as it was"
}
# A manifest that omits the weights, the weights holding NaN: neither is vouched for.
d=$(v1 noweights)
st_edit "$d/transformer/diffusion_pytorch_model.safetensors" "t['head_action.bias'][0] = float('nan')"
edit_json "$d/MANIFEST.json" \
  "j['files'] = [f for f in j['files'] if f['path'] != 'transformer/diffusion_pytorch_model.safetensors']"
refused noweights "MANIFEST.json does not list transformer/diffusion_pytorch_model.safetensors"
# NaN weights under a manifest that lists them (re-hashed): refused like a save refuses them.
d=$(v1 nanw)
st_edit "$d/transformer/diffusion_pytorch_model.safetensors" "t['head_action.bias'][0] = float('nan')"
"$baton" manifest write "$d" --step 1 >/dev/null
edit_json "$d/MANIFEST.json" "j['format_version'] = 1"
refused nanw "diffusion_pytorch_model.safetensors: tensor 'head_action.bias' holds 1 NaN/Inf value(s)"
d=$(v1 nano)
st_edit "$d/optimizer.safetensors" "t['exp_avg_sq.head_action.weight'][0, 0] = float('inf')"
"$baton" manifest write "$d" --step 1 >/dev/null
edit_json "$d/MANIFEST.json" "j['format_version'] = 1"
refused nano "optimizer.safetensors: tensor 'exp_avg_sq.head_action.weight' holds 1 NaN/Inf value(s)"
# No tensors at all.
d=$(v1 empty)
st_edit "$d/transformer/diffusion_pytorch_model.safetensors" "t = {}"
"$baton" manifest write "$d" --step 1 >/dev/null
edit_json "$d/MANIFEST.json" "j['format_version'] = 1"
refused empty "diffusion_pytorch_model.safetensors: holds no tensors"
# A trainer_state.json that is not JSON (re-hashed, so only the parse can tell).
d=$(v1 state)
echo '{"step": 1, not json' >"$d/trainer_state.json"
"$baton" manifest write "$d" --step 1 >/dev/null
edit_json "$d/MANIFEST.json" "j['format_version'] = 1"
refused state "$d/trainer_state.json: not a JSON object"
# A trailing slash names the same folder: the partial and the kept copy are its siblings.
d=$(v1 slash)
expect_exit 0 "$bt" ckpt upgrade "$d/"
[ -d "$d.v1" ] && [ ! -e "$d/.upgrade.partial" ] && [ ! -e "$d.upgrade.partial" ] ||
  fail "upgrade of $d/: $(ls -A "$tmp/slash") / $(ls -A "$d")"
expect_exit 0 "$bt" ckpt verify "$d"
ok "ckpt upgrade DIR/ upgrades DIR in place, keeping DIR.v1"
d=$(v1 dot)
bt_abs=$(cd "$(dirname "$bt")" && pwd)/$(basename "$bt")
expect_exit 0 bash -c "cd '$d' && '$bt_abs' ckpt upgrade ."
[ -d "$d.v1" ] && [ ! -e "$d/.upgrade.partial" ] || fail "upgrade of .: $(ls -A "$tmp/dot") / $(ls -A "$d")"
expect_exit 0 "$bt" ckpt verify "$d"
ok "ckpt upgrade . upgrades the current folder, keeping it as .v1 beside it"

echo "upstream_refusals_test: $checks checks passed"
