#!/usr/bin/env bash
# lr-schedule (the worked examples of docs/design.md), verify-packing (float64 to 1e-10), one optimizer step on 1 vs
# 2 ranks and across batch x accum splits, weights-only resume (LR re-warmup marked in events),
# and a checkpoint of another model config refused naming the keys.
# usage: tools_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"

expect_exit 0 "$bt" lr-schedule --lr 3e-5 --warmup 200 --step0 1500 --resume-warmup 50 --steps 60 --json
python3 - "$out" <<'PY'
import json, sys
rows = json.loads(sys.argv[1])
assert rows[0] == {"s": 0, "step": 1500, "lr": rows[0]["lr"]}, rows[0]
assert abs(rows[0]["lr"] - 6e-7) < 1e-20, rows[0]
assert abs(rows[49]["lr"] - 3e-5) < 1e-20, rows[49]
assert all(abs(r["lr"] - 3e-5) < 1e-20 for r in rows[49:]), rows[55]
PY
checks=$((checks + 1)); echo "ok: resume at 1500: s=0 6e-7, s=49 3e-5"
expect_exit 0 "$bt" lr-schedule --lr 3e-5 --warmup 200 --step0 100 --resume-warmup 50 --json
python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert abs(r[0]['lr']-3e-7) < 1e-20, r[0]" "$out"
checks=$((checks + 1)); echo "ok: resume at 100 (mid-warmup): s=0 3e-7"
expect_exit 0 "$bt" lr-schedule --lr 1e-3 --warmup 4 --steps 6
expect_in "$out" "1.000000e-03"
expect_exit 64 "$bt" lr-schedule --lr -1 --warmup 4

make_dataset "$tmp/ds" 32 5:14
DTYPE=float64 write_config "$tmp/f64.yaml" "$tmp/f64"
expect_exit 0 "$bt" verify-packing --config "$tmp/f64.yaml" --json
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["ok"] and r["dtype"] == "float64", r
names = [c["name"] for c in r["checks"]]
assert names == ["equal_lengths", "different_lengths"], names
mixed = r["checks"][1]
assert len(set(mixed["frames"])) == 4 and mixed["padded_frames"] > min(mixed["frames"]), mixed
for c in r["checks"]:
    assert c["loss_rel_diff"] <= 1e-10 and c["max_grad_rel_diff"] <= 1e-10, c
    assert c["grads_finite"] == c["grads_total"] > 0, c
for k in ("batches_per_epoch", "padding_waste", "distinct_shapes"):
    assert k in r["sampler"], k
PY
checks=$((checks + 1)); echo "ok: verify-packing float64: packed == single to 1e-10, all grads finite"
f64_out=$out
# bf16 autocast (float32 weights): the loss and the gradients as one vector within bf16 rounding,
# the per-tensor figure reported; a GPU asked of a CPU build is a config error naming the build.
# The tolerance is derived from the dtype and the model (trainer/train/rounding_bound.h): restated
# here from its parts, so a tolerance fitted to one CPU, or one that ignores the dtype, fails.
expect_exit 0 "$bt" verify-packing --config "$tmp/f64.yaml" --dtype bfloat16 --json
python3 - "$out" "$f64_out" <<'PY'
import json, math, sys
r = json.loads(sys.argv[1])
f64 = {c["name"]: c for c in json.loads(sys.argv[2])["checks"]}
assert r["ok"] and r["dtype"] == "bfloat16" and r["device"] == "cpu", r
# write_config's model: dim 24, 1 layer, ffn 48; its 2-D (matmul) weights, counted from the
# model's parameter names as the trainer lists them.
dim, layers, ffn = 24, 1, 48
u, uacc = 2.0 ** -8, 2.0 ** -24
for c in r["checks"]:
    weights = c["matmul_weights"]
    assert weights >= 10 * layers, c  # q, k, v, out twice and the FFN's two, at least
    roundings = 2 * (2 * weights + 3 * 2 * layers)
    sums = layers * (math.sqrt(dim) + math.sqrt(ffn) + 2 * math.sqrt(c["row_tokens"]))
    want = 2 * 2 * (u * math.sqrt(roundings) + uacc * sums)
    assert abs(c["tolerance"] - want) < 1e-12 * want, (c, want)
    assert c["tolerance"] < 0.5, c  # a broken packing (O(1) differences) cannot pass
    # bf16 is really on: the losses are float64's to bf16 rounding, not to float32's (~5e-8);
    # each side is within one side's bound (half the tolerance) of float64's.
    ref = f64[c["name"]]["loss_packed"]
    off = max(abs(c[k] - ref) for k in ("loss_packed", "loss_single")) / abs(ref)
    assert 1e-6 < off <= c["tolerance"] / 2, (c, ref)
    # Not exact either: the gradients, summed over every token, differ by bf16 rounding (float32:
    # ~1e-7). The loss alone may agree to float32 rounding where the lengths are equal: it does
    # on libtorch 2.6's CPU (6.6e-8), not on 1.13's (2.3e-4).
    assert c["loss_rel_diff"] <= c["tolerance"], c
    assert 1e-6 < c["grad_norm_rel_diff"] <= c["tolerance"], c
    assert c["max_grad_rel_diff"] >= c["grad_norm_rel_diff"] * 0.1, c
assert r["tolerance"] == max(c["tolerance"] for c in r["checks"]), r
PY
checks=$((checks + 1)); echo "ok: verify-packing bf16: loss and gradients within bf16 rounding, not exact"
expect_exit 78 "$bt" verify-packing --config "$tmp/f64.yaml" --device cuda
expect_in "$err" "built without CUDA"
expect_exit 78 "$bt" one-step --config "$tmp/f64.yaml" --count 4 --device cuda --out "$tmp/x.safetensors"
checks=$((checks + 1)); echo "ok: --device cuda on a CPU build: exit 78 naming the build"

# One optimizer step over the same 16 episodes: 1 rank batch 4 x accum 4 is the reference.
expect_exit 0 "$bt" one-step --config "$tmp/f64.yaml" --count 16 --batch-size 4 --out "$tmp/ref.safetensors"
for split in 1 16; do
  expect_exit 0 "$bt" one-step --config "$tmp/f64.yaml" --count 16 --batch-size $split --out "$tmp/b$split.safetensors"
  expect_exit 0 "$bt" tensor-diff "$tmp/b$split.safetensors" "$tmp/ref.safetensors" --max-rel 1e-10
done
store=$tmp/rdzv
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 BATON_RDZV_FILE=$store "$bt" one-step --config "$tmp/f64.yaml" --count 16 \
    --batch-size 4 --out "$tmp/two.safetensors" >"$tmp/rank$r.log" 2>&1 &
done
wait
grep -q "on 2 rank(s)" "$tmp/rank0.log" || fail "2-rank one-step did not run: $(cat "$tmp/rank0.log")"
grep -q "1 all-reduce call(s)" "$tmp/rank0.log" || fail "expected one bucketed reduction: $(cat "$tmp/rank0.log")"
checks=$((checks + 1)); echo "ok: 2 ranks made one all-reduce call for the step"
expect_exit 0 "$bt" tensor-diff "$tmp/two.safetensors" "$tmp/ref.safetensors" --max-rel 1e-10
# ... and the check can fail: another step index draws other noise.
expect_exit 0 "$bt" one-step --config "$tmp/f64.yaml" --count 16 --batch-size 4 --step 1 --out "$tmp/other.safetensors"
expect_exit 1 "$bt" tensor-diff "$tmp/other.safetensors" "$tmp/ref.safetensors" --max-rel 1e-10

# tensor-diff is the oracle of every bit-exactness check above: NaN and Inf must count.
# st FILE DTYPE VALUES...: a one-tensor file (tensor $NAME, default w); raw32: F32 given as hex.
st() {
  python3 - "$tmp/$1.safetensors" "${NAME:-w}" "$2" "${@:3}" <<'PY'
import json, struct, sys
path, name, dtype, vals = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
if dtype == "raw32":
    dtype, data = "F32", b"".join(bytes.fromhex(v) for v in vals)
else:
    data = struct.pack("<%d%s" % (len(vals), {"F32": "f", "F64": "d"}[dtype]), *map(float, vals))
h = json.dumps({name: {"dtype": dtype, "shape": [len(vals)], "data_offsets": [0, len(data)]}}).encode()
open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}
td() { expect_exit "$1" "$bt" tensor-diff "$tmp/$2.safetensors" "$tmp/$3.safetensors" "${@:4}"; }
st fin F32 1 2 3;  st fin2 F32 1 2.0000002 3;  st nan1 F32 1 nan 3;  st nan1b F32 1.0000001 nan 3
st nan0 F32 nan 2 3;  st pinf F32 1 inf 3;  st ninf F32 1 -inf 3;  st pinf2 F32 1.0000001 inf 3
td 1 nan1 fin --max-rel 1e30                 # NaN vs finite: no tolerance makes them equal
expect_in "$out" "tensor 'w': 1 element(s) where NaN/Inf do not match, the first at element 1 (nan vs 2)"
expect_in "$out" "max relative difference inf in w"
td 1 fin nan1 --max-rel 1e30                 # ... either way round
td 1 nan0 nan1 --max-rel 1e30                # NaN vs NaN at other positions
expect_in "$out" "2 element(s) where NaN/Inf do not match, the first at element 0 (nan vs 1)"
td 1 pinf ninf --max-rel 1e30                # +Inf vs -Inf
expect_in "$out" "(inf vs -inf)"
td 1 pinf fin --max-rel 1e30                 # Inf vs finite
td 0 nan1b nan1 --max-rel 1e-6               # NaN at the same places, the rest within tolerance
expect_in "$out" "max relative difference 3.974e-08 in w"
td 1 nan1b nan1                              # ... but not at --max-rel 0
td 0 pinf2 pinf --max-rel 1e-6               # same-signed Inf at the same place
td 1 fin2 fin                                # a finite difference at --max-rel 0
td 0 fin2 fin --max-rel 1e-6
# --bitwise: the same dtype and bytes; the value comparison's equalities are not enough.
st fin64 F64 1 2 3;  st nanA raw32 0000803f 0000c07f 00004040;  st nanB raw32 0000803f 0100c07f 00004040
st zero F32 0 1;  st negzero F32 -0.0 1
td 0 fin64 fin                               # F64 vs F32 of the same values: equal values ...
td 1 fin64 fin --bitwise                     # ... different bytes
expect_in "$out" "differs: tensor 'w': dtype F64 vs F32"
expect_in "$out" "1 tensors, 0 bit-identical, 1 differ (bitwise)"
td 0 nanA nanB                               # NaN payloads differ: equal as values ...
td 1 nanA nanB --bitwise                     # ... not as bytes
expect_in "$out" "differs: tensor 'w': 1 of 12 bytes differ, the first at byte 4 (element 1)"
td 0 negzero zero && td 1 negzero zero --bitwise
td 0 nan1 nan1 --bitwise
expect_in "$out" "1 tensors, 1 bit-identical, 0 differ (bitwise)"
td 1 fin2 fin --bitwise
# Unreadable files, other names or shapes: 65, in both modes; bad usage: 64.
st short F32 1 2
td 65 short fin && expect_in "$err" "missing or shaped differently"
td 65 short fin --bitwise
NAME=v st named F32 1 2 3
td 65 named fin && td 65 fin named --bitwise
mkfifo "$tmp/fifo.safetensors"
expect_exit 65 timeout 20 "$bt" tensor-diff "$tmp/fifo.safetensors" "$tmp/fin.safetensors"
expect_in "$err" "$tmp/fifo.safetensors: not a valid safetensors file: it is a FIFO"
td 64 fin fin --bitwise --max-rel 1e-3
td 64 fin fin --max-rel -1
td 64 fin fin --max-rel nan

# Weights-only resume from an upstream-style folder (weights + config.json, nothing else).
STEPS=5 EVERY=5 write_config "$tmp/w.yaml" "$tmp/w" "" 
rc=0; train_ranks 1 --config "$tmp/w.yaml" || rc=$?
[ $rc -eq 0 ] || fail "weights run exited $rc"
up=$tmp/upstream/checkpoint_step_5
mkdir -p "$up" && cp -r "$tmp/w/checkpoints/checkpoint_step_5/transformer" "$up/"
STEPS=12 write_config "$tmp/w2.yaml" "$tmp/w2" "" 
sed -i 's/warmup_steps: 3/warmup_steps: 3, resume_warmup_steps: 4/' "$tmp/w2.yaml"
rc=0; train_ranks 1 --config "$tmp/w2.yaml" --resume "$up" --expect-mode weights_only --expect-step0 5 || rc=$?
[ $rc -eq 0 ] || fail "weights-only resume exited $rc: $(tail -3 "$tmp/train.log")"
python3 - "$(events_file "$tmp/w2" local 0)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
start = [r for r in rows if r["type"] == "segment_start"][0]
assert start["mode"] == "weights_only" and start["step0"] == 5, start
assert start["resume_warmup_steps"] == 4 and start["warmup_until"] == 8, start
steps = {r["step"]: r for r in rows if r["type"] == "step"}
base = 2e-3
for s in range(5, 12):
    want = base * min(1.0, (s - 5 + 1) / 4)
    assert abs(steps[s]["lr"] - want) < 1e-18, (s, steps[s]["lr"], want)
    assert steps[s]["in_warmup"] == (s < 8), (s, steps[s]["in_warmup"])
PY
checks=$((checks + 1)); echo "ok: weights-only resume at 5: lr = base * min(1, (s+1)/4), warmup steps marked"

# The launcher's decision must match the checkpoint.
expect_exit 78 "$bt" train --config "$tmp/w2.yaml" --resume "$up" --expect-mode exact
expect_in "$err" "the launcher decided mode exact"

# A checkpoint of another model config is refused, naming the keys.
sed 's/dim: 24, heads: 2, layers: 1/dim: 36, heads: 2, layers: 2/' "$tmp/w.yaml" >"$tmp/other.yaml"
expect_exit 78 "$bt" train --config "$tmp/other.yaml" --resume "$tmp/w/checkpoints/checkpoint_step_5"
expect_in "$err" "was written by another model config: attention_head_dim 12 vs 18, num_layers 1 vs 2"
echo "$checks passed, 0 failed"
