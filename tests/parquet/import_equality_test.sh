#!/usr/bin/env bash
# The same LeRobot episodes, their parquet rewritten by DuckDB under every codec and data page
# version, import to the same baton dataset byte for byte as the files make_upstream_dataset.py
# writes (SNAPPY, dictionaries, v1 and v2). Only what fingerprints the input files differs: the
# import report, and each episode's `source` metadata (16 hex digits, zeroed before the compare).
# Usage: import_equality_test.sh BATON_TRAIN SOURCE_DIR WORK_DIR
set -euo pipefail
bt=$1 src=$2 work=$3
npm_dir=$work/npm
mkdir -p "$npm_dir"
if [ ! -d "$npm_dir/node_modules/@duckdb/node-api" ]; then
  cp "$src/tests/parquet/package.json" "$src/tests/parquet/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
cp "$src/tests/parquet/rewrite_episodes.mjs" "$npm_dir/"
tmp=$work/import
rm -rf "$tmp" && mkdir -p "$tmp"
(cd "$src/tests/lerobot" && /usr/bin/python3 make_upstream_dataset.py "$tmp/up") >/dev/null
import_to() {  # SRC OUT
  "$bt" import-lerobot --src "$1" --out "$2" --profile "$tmp/up/profile.yaml" --workers 2 --json \
    >"$2.json"
}
import_to "$tmp/up/src" "$tmp/base"
# What an import writes, less the report of its inputs.
dataset_files() { (cd "$1" && find . -type f ! -name import_report.json | sort); }
base_files=$(dataset_files "$tmp/base")
[ -n "$base_files" ] || { echo "FAIL: the base import wrote nothing"; exit 1; }
# Byte equality once the `source` fingerprint is zeroed (it keeps its length).
same() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import re, sys
a, b = (re.sub(rb'"source":"[0-9a-f]{16}"', b'"source":"' + b'0' * 16 + b'"', open(p, 'rb').read())
        for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PY
}
passed=0 failed=0
for codec in uncompressed snappy gzip zstd brotli lz4_raw; do
  for version in V1 V2; do
    # The same folder name as the original: episode ids are derived from it.
    mkdir -p "$tmp/${codec}_$version"
    v=$tmp/${codec}_$version/ds
    cp -r "$tmp/up/src" "$tmp/${codec}_$version/src"
    node "$npm_dir/rewrite_episodes.mjs" "$codec" "$version" "$tmp/${codec}_$version/src"/*/data/chunk-*/*.parquet
    if ! import_to "$tmp/${codec}_$version/src" "$v"; then
      echo "FAIL: $codec $version: the import failed: $(tail -c 300 "$v.json")"
      failed=$((failed + 1))
      continue
    fi
    diffs=""
    [ "$(dataset_files "$v")" = "$base_files" ] || diffs="the file lists differ"
    for f in $base_files; do
      same "$tmp/base/$f" "$v/$f" || diffs="$diffs $f"
    done
    if [ -z "$diffs" ]; then
      passed=$((passed + 1))
    else
      echo "FAIL: $codec $version: $diffs"
      failed=$((failed + 1))
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
