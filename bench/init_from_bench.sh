#!/usr/bin/env bash
# --init-from benchmark: reading a ~1 GB sharded bf16 upstream-layout checkpoint into fp32 master
# weights (index + 4 shards, by `baton-train forward --init-from`, which reports its load time),
# next to `cat` of the same shard bytes into /dev/null in the same run. Both run with the page
# cache warm (a first cat reads the files in), so the figure is the reader's cost, not the disk's.
# usage: bench/init_from_bench.sh [BUILD_DIR]   (needs python3-torch for the fixture)
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
PY=${BATON_PYTHON:-/usr/bin/python3}
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT

# D = 12 x 128 = 1536, 15 layers, ffn 4096: ~510M parameters, ~1.02 GB in bf16
# (BATON_BENCH_LAYERS=1 for a quick sanity run).
echo "== writing the fixture (python3-torch)"
"$PY" tests/upstream/upstream_fixture.py checkpoint "$work/up" --heads 12 --head-dim 128 \
  --layers "${BATON_BENCH_LAYERS:-15}" --ffn-dim 4096 --shards 4
"$PY" tests/upstream/upstream_fixture.py inputs "$work/up" "$work/in.safetensors" --frames 1 \
  --height 2 --width 2 --steps 1 --text-len 4
shards=("$work"/up/transformer/*.safetensors)
bytes=$(cat "${shards[@]}" | wc -c)
echo "shards: ${#shards[@]}, $((bytes / 1000000)) MB"

cat "${shards[@]}" >/dev/null  # warm the page cache for both
t0=$(date +%s.%N)
cat "${shards[@]}" >/dev/null
t1=$(date +%s.%N)
cat_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')

out=$("$bt" forward --init-from "$work/up" --inputs "$work/in.safetensors" --out "$work/out.safetensors")
echo "$out"
load_s=$(echo "$out" | sed -n 's/^weights: .* in \([0-9.]*\) s$/\1/p')
awk -v c="$cat_s" -v l="$load_s" -v b="$bytes" 'BEGIN {
  printf "== cat: %.3f s (%.0f MB/s); --init-from load: %.3f s (%.0f MB/s), %.1fx cat\n",
         c, b / 1e6 / c, l, b / 1e6 / l, l / c }'
