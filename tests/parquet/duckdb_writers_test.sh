#!/usr/bin/env bash
# Parquet from another writer: DuckDB (npm @duckdb/node-api, tests/parquet/package-lock.json)
# writes one LeRobot-like episode under every codec (UNCOMPRESSED, SNAPPY, GZIP, ZSTD, BROTLI,
# LZ4_RAW) and data page version (v1: PLAIN and dictionaries; v2: DELTA_BINARY_PACKED,
# BYTE_STREAM_SPLIT, RLE_DICTIONARY), in several row groups. baton's reader must return every
# value exactly as DuckDB holds it: its dump of each file equals DuckDB's, byte for byte.
# Usage: duckdb_writers_test.sh PARQUET_DUMP SOURCE_DIR WORK_DIR
set -euo pipefail
dump=$1 src=$2 work=$3
npm_dir=$work/npm
mkdir -p "$npm_dir"
if [ ! -d "$npm_dir/node_modules/@duckdb/node-api" ]; then
  cp "$src/tests/parquet/package.json" "$src/tests/parquet/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
out=$work/files
rm -rf "$out" && mkdir -p "$out"
cp "$src/tests/parquet/write_episodes.mjs" "$npm_dir/"
node "$npm_dir/write_episodes.mjs" "$out" | tee "$out/files.txt"
grep -q "DELTA_BINARY_PACKED" "$out/files.txt" && grep -q "BYTE_STREAM_SPLIT" "$out/files.txt" ||
  { echo "FAIL: DuckDB wrote no v2 encodings"; exit 1; }
passed=0 failed=0
for f in "$out"/episode_*.parquet; do
  if "$dump" "$f" > "$f.dump" && cmp -s "$f.dump" "$out/expected.dump"; then
    passed=$((passed + 1))
  else
    echo "FAIL: $(basename "$f"): the reader's values differ from DuckDB's"
    diff "$f.dump" "$out/expected.dump" | head -5 || true
    failed=$((failed + 1))
  fi
done
[ "$passed" -ge 14 ] || { echo "FAIL: only $passed files"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
