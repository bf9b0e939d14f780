#!/usr/bin/env bash
# baton-train synth-data / sampler-stats / data-check through the real binary, including a
# corrupt, a truncated, a missing, a FIFO, a folder and a size-overflowing episode file (exit 65
# naming the file).
# usage: data_tools_test.sh BATON_TRAIN
source "$(dirname "$0")/lib.sh"
bt=$1
ds=$tmp/ds

expect_exit 0 "$bt" synth-data --out "$ds" --episodes 24 --seed 5 --frames 10:40 --height 4 --width 4
expect_in "$out" "wrote 24 episodes"
[ "$(wc -l <"$ds/meta/episodes.jsonl")" -eq 24 ] || fail "index has 24 lines"
expect_exit 64 "$bt" synth-data --out "$ds" --episodes 24 --seed 5
expect_in "$err" "--overwrite"
expect_exit 64 "$bt" synth-data --out "$tmp/x" --episodes 2 --seed 1 --frames 9
expect_exit 64 "$bt" synth-data --out "$tmp/x" --episodes 2 --seed 1 --frames 9:3

expect_exit 0 "$bt" sampler-stats --data "$ds" --batch-size 4 --world-size 2 --pad-multiple 8 \
  --pool-factor 50 --seed 0 --json
python3 - "$out" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
for k in ("batches_per_epoch", "padding_waste", "distinct_shapes", "min_frames", "max_frames", "episodes"):
    assert k in s, k
assert s["episodes"] == 24 and s["min_frames"] == 10 and s["max_frames"] == 40, s
assert s["batches_per_epoch"] == 3, s          # 24 / (2 ranks * 4)
assert 0 <= s["padding_waste"] < 1, s
PY
checks=$((checks + 1))
# The sampler reads metadata only: it works with every episode file gone.
mkdir -p "$tmp/meta-only/meta" && cp "$ds/meta/episodes.jsonl" "$tmp/meta-only/meta/"
expect_exit 0 "$bt" sampler-stats --data "$tmp/meta-only" --batch-size 4 --world-size 8 \
  --pad-multiple 8 --pool-factor 50 --seed 0 --plan per_rank
expect_in "$out" "batches/epoch     1 per rank"
expect_exit 65 "$bt" sampler-stats --data "$tmp/nothing" --batch-size 4 --world-size 1 \
  --pad-multiple 8 --pool-factor 50 --seed 0
expect_exit 64 "$bt" sampler-stats --data "$ds" --batch-size 0 --world-size 1 --pad-multiple 8 \
  --pool-factor 50 --seed 0

expect_exit 0 "$bt" data-check --data "$ds" --batch-size 4 --json
python3 -c "import json,sys; s=json.loads(sys.argv[1]); assert s['episodes'] == 24 and s['batches'] == 6, s" "$out"
checks=$((checks + 1))

victim=$ds/episodes/ep_000007.safetensors
cp "$victim" "$tmp/keep"
head -c 300 "$tmp/keep" >"$victim"          # truncated
expect_exit 65 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$victim"
cp "$tmp/keep" "$victim" && printf 'XXXXXXXX' | dd of="$victim" bs=1 seek=8 conv=notrunc status=none
expect_exit 65 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$victim: not a valid safetensors file"
rm "$victim"                                 # missing
expect_exit 65 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$victim: no such file"
mkfifo "$victim"                             # a FIFO: refused unopened (timeout: never block)
expect_exit 65 timeout 20 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$victim: not a valid safetensors file: it is a FIFO, not a regular file"
rm "$victim" && mkdir "$victim"              # a folder
expect_exit 65 timeout 20 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$victim: not a valid safetensors file: it is a folder, not a regular file"
rmdir "$victim"
# A shape whose byte size wraps around 2^64 (2^62 x 4 x 4 bytes = 0 mod 2^64) against 0 bytes.
python3 - "$victim" <<'PY'
import json, struct, sys
h = json.dumps({"latents": {"dtype": "F32", "shape": [2**62, 4], "data_offsets": [0, 0]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h)
PY
expect_exit 65 timeout 20 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$victim: not a valid safetensors file: tensor 'latents' has shape [4611686018427387904, 4] whose size in F32 bytes overflows 64 bits"
# The index itself as a FIFO: refused before it is opened, for the commands that skip validation.
mv "$ds/meta/episodes.jsonl" "$tmp/index.keep" && mkfifo "$ds/meta/episodes.jsonl"
expect_exit 65 timeout 20 "$bt" data-check --data "$ds" --batch-size 4
expect_in "$err" "$ds/meta/episodes.jsonl: not a regular file"
expect_exit 65 timeout 20 "$bt" sampler-stats --data "$ds" --batch-size 4 --world-size 1 --pad-multiple 4 --pool-factor 2 --seed 1
rm "$ds/meta/episodes.jsonl" && mv "$tmp/index.keep" "$ds/meta/episodes.jsonl"
echo "$checks passed, 0 failed"
