#!/usr/bin/env bash
# Checkpoints written by every rank: on 2 ranks each rank writes the optimizer state, master
# weights and transformer/ shards of the parameters it owns (replicated runs too), rank 0 the
# small files and the manifest; the layout verifies, resumes bit for bit on 2 ranks and exactly
# on 1, and its transformer/ alone initialises a run. Every byte is hashed on load: a flipped
# byte in a file the load reads, or in one no rank reads (transformer/ beside master weights), is
# exit 65 on every rank. usage: ckpt_layout_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 16 5:12
# bf16_config FILE RUN_DIR: write_config's run with a bf16 export (so master weights are saved).
bf16_config() {
  STEPS=4 ACCUM=1 write_config "$1" "$2"
  sed -i 's/keep_last: 3}/keep_last: 3, export_dtype: bf16}/' "$1"
}

# 1. The files of a 2-rank replicated save, and who wrote them.
bf16_config "$tmp/full.yaml" "$tmp/full"
rc=0; train_ranks 2 --config "$tmp/full.yaml" || rc=$?
[ $rc -eq 0 ] || fail "2-rank run exited $rc: $(tail -3 "$tmp/train.log")"
ck=$tmp/full/checkpoints/checkpoint_step_4
for f in optimizer-00001-of-00002.safetensors optimizer-00002-of-00002.safetensors optimizer.safetensors.index.json \
  master_weights-00001-of-00002.safetensors master_weights-00002-of-00002.safetensors \
  master_weights.safetensors.index.json transformer/diffusion_pytorch_model.safetensors.index.json \
  transformer/config.json trainer_state.json MANIFEST.json; do
  [ -f "$ck/$f" ] || fail "a 2-rank save lacks $f"
done
for f in optimizer.safetensors master_weights.safetensors transformer/diffusion_pytorch_model.safetensors; do
  [ ! -e "$ck/$f" ] || fail "a 2-rank save wrote the single file $f"
done
python3 - "$ck" <<'PY' || fail "the per-rank files do not split the state"
import json, sys
d = sys.argv[1]
for idx in ("master_weights.safetensors.index.json", "optimizer.safetensors.index.json",
            "transformer/diffusion_pytorch_model.safetensors.index.json"):
    files = set(json.load(open(f"{d}/{idx}"))["weight_map"].values())
    assert len(files) >= 2, (idx, files)  # both ranks hold a share
PY
grep -q "bytes per rank: [0-9]* [0-9]*" "$tmp/train.log" || fail "rank 0 does not report the bytes per rank"
# The plan submit weighs against the preemption grace predicts each rank's tensor bytes: what the
# save wrote is that plus headers and rank 0's small files (tens of kB here).
"$bt" plan-memory --config "$tmp/full.yaml" --world-size 2 --json > "$tmp/plan.json" ||
  fail "plan-memory failed"
python3 - "$tmp/plan.json" "$(grep -o "bytes per rank: [0-9 ]*" "$tmp/train.log" | tail -1)" <<'PY' ||
import json, sys
plan = json.load(open(sys.argv[1]))["checkpoint"]
written = [int(x) for x in sys.argv[2].split(":")[1].split()]
assert len(plan["rank_bytes"]) == len(written) == 2, (plan, written)
assert plan["bytes_per_rank_max"] == max(plan["rank_bytes"]) > 0, plan
for p, w in zip(plan["rank_bytes"], written):
    assert p <= w <= p + 65536, (plan["rank_bytes"], written)
PY
  fail "the planned checkpoint bytes per rank are not what the save wrote"
expect_exit 0 "$bt" ckpt verify "$ck"

# 2. Exact resume on 2 ranks is bit for bit (every tensor file); on 1 rank it continues exactly.
bf16_config "$tmp/cut.yaml" "$tmp/cut"
rc=0; train_ranks 2 --config "$tmp/cut.yaml" --stop-after 2 || rc=$?; [ $rc -eq 75 ] || fail "stop exited $rc"
rc=0; train_ranks 2 --config "$tmp/cut.yaml" || rc=$?; [ $rc -eq 0 ] || fail "resume exited $rc"
same_checkpoint "$ck" "$tmp/cut/checkpoints/checkpoint_step_4"
cp -r "$tmp/cut" "$tmp/one"
sed "s#dir: $tmp/cut#dir: $tmp/one#; s/steps: 4,/steps: 5,/" "$tmp/cut.yaml" >"$tmp/one.yaml"
expect_exit 0 "$bt" train --config "$tmp/one.yaml"
python3 - "$(events_file "$tmp/one" local 0)" <<'PY' || fail "the 1-rank resume of the 2-rank checkpoint was not exact from step 4"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"segment_start"' in l][-1]
assert s["mode"] == "exact" and s["step0"] == 4 and s["world_size"] == 1, s
PY
expect_exit 0 "$bt" ckpt verify "$tmp/one/checkpoints/checkpoint_step_5"

# 3. transformer/ alone starts a run.
STEPS=1 write_config "$tmp/init.yaml" "$tmp/init"
expect_exit 0 "$bt" train --config "$tmp/init.yaml" --init-from "$ck/transformer"

# 4. A flipped byte is found on load, in a file the load reads and in one it does not.
flip() { printf '\x55' | dd of="$1" bs=1 seek=$(($(stat -c %s "$1") - 3)) conv=notrunc 2>/dev/null; }
for f in master_weights-00002-of-00002.safetensors transformer/diffusion_pytorch_model.safetensors; do
  rm -rf "$tmp/flip" && cp -r "$tmp/cut" "$tmp/flip"
  sed "s#dir: $tmp/cut#dir: $tmp/flip#; s/steps: 4,/steps: 5,/" "$tmp/cut.yaml" >"$tmp/flip.yaml"
  c=$tmp/flip/checkpoints/checkpoint_step_4
  target=$f
  [ -f "$c/$f" ] || target=$(cd "$c" && ls transformer/diffusion_pytorch_model-*.safetensors | tail -1)
  flip "$c/$target"
  rc=0; train_ranks 2 --config "$tmp/flip.yaml" --resume "$c" || rc=$?
  [ $rc -eq 65 ] || fail "a flipped byte in $target: exit $rc, expected 65 on both ranks"
  grep -q "$target: content hash .* differs from the manifest's" "$tmp/train.log" ||
    fail "no rank names the corrupted $target"
  checks=$((checks + 1)); echo "ok: a flipped byte in $target: exit 65 on both ranks, named"
done
echo "$checks passed, 0 failed"
