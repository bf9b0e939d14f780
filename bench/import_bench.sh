#!/usr/bin/env bash
# LeRobot import benchmark: a generated upstream-style dataset of N one-segment episodes (two
# distinct prompts, text L x Dt bf16, robotwin layout) imported with and without text dedupe.
# Prints segments/s and MB/s of the import, the MB/s of merely reading the same input bytes
# (cat, page cache warm), and the output size with and without dedupe.
# Then the parquet reader alone: its decode rate (every column of each file, through
# tests/parquet/parquet_dump --quiet) against a plain read of the same files, on the real G1
# episodes (pyarrow, SNAPPY, dictionaries) and, when the parquet.duckdb_writers test has left
# them in BUILD_DIR, on DuckDB's files of every codec and page version.
# usage: bench/import_bench.sh [BUILD_DIR] [SEGMENTS (500)] [TEXT_LEN (512)] [TEXT_DIM (4096)] [WORKERS (2)]
#        bench/import_bench.sh --parquet-only [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load

# decode_rate LABEL REPEAT FILES...: MB/s of the files' bytes, cat vs the reader.
decode_rate() {
  local label=$1 rep=$2; shift 2
  local bytes values t0 t_cat t_dec
  bytes=$(cat "$@" | wc -c)
  values=$(for f in "$@"; do "$dump" "$f" --quiet; done | awk '{s += $1} END {print s}')
  t0=$EPOCHREALTIME
  for _ in $(seq "$rep"); do cat "$@" >/dev/null; done
  t_cat=$(python3 -c "print($EPOCHREALTIME - $t0)")
  t0=$EPOCHREALTIME
  for _ in $(seq "$rep"); do for f in "$@"; do "$dump" "$f" --quiet >/dev/null; done; done
  t_dec=$(python3 -c "print($EPOCHREALTIME - $t0)")
  python3 - "$label" "$rep" "$bytes" "$values" "$t_cat" "$t_dec" <<'PY'
import sys
label, rep, b, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t_cat, t_dec = float(sys.argv[5]), float(sys.argv[6])
mb = b * rep / 1e6
print(f"  {label:<22} {b / 1e6:6.2f} MB  cat {mb / t_cat:8.1f} MB/s  decode {mb / t_dec:7.1f} MB/s"
      f"  {v * rep / t_dec / 1e6:6.1f} Mvalues/s  ({t_dec / t_cat:5.1f}x cat)")
PY
}

parquet_bench() {
  dump=$1/tests/parquet/parquet_dump
  [ -x "$dump" ] || { echo "build first: cmake --build $1 --target parquet_dump" >&2; exit 1; }
  echo "parquet decode (every column; process start included, so small files understate it):"
  decode_rate "G1 episodes (pyarrow)" 20 tests/data/lerobot_g1_v21/data/chunk-000/*.parquet
  local duck=$1/tests/parquet/files
  if ls "$duck"/episode_*.parquet >/dev/null 2>&1; then
    for f in "$duck"/episode_*.parquet; do
      local name
      name=$(basename "$f" .parquet)
      decode_rate "DuckDB ${name#episode_}" 5 "$f"
    done
  else
    echo "  (no DuckDB files: run ctest -R parquet.duckdb_writers in $1 first)"
  fi
}

if [ "${1:-}" = --parquet-only ]; then
  parquet_bench "${2:-build}"
  exit 0
fi
bt=${1:-build}/trainer/baton-train
n=${2:-500} L=${3:-512} D=${4:-4096} workers=${5:-2}
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd tests/lerobot && /usr/bin/python3 make_upstream_dataset.py "$work/up" --segments "$n" \
  --text-len "$L" --text-dim "$D") >/dev/null
in_bytes=$(du -sb "$work/up/src" | cut -f1)

elapsed() { python3 -c "print($EPOCHREALTIME - $1)"; }
t0=$EPOCHREALTIME
find "$work/up/src" -type f -exec cat {} + >/dev/null
t_read=$(elapsed "$t0")

imp() {  # OUT [flags...] -> report JSON; seconds in $t_imp
  local out=$1; shift
  local t0=$EPOCHREALTIME
  "$bt" import-lerobot --src "$work/up/src" --out "$out" --profile "$work/up/profile.yaml" \
    --workers "$workers" --json "$@" >"$out.json"
  t_imp=$(elapsed "$t0")
}
imp "$work/dedupe"
t_dedupe=$t_imp
imp "$work/plain" --no-text-dedupe
t_plain=$t_imp
size_dedupe=$(du -sb "$work/dedupe" | cut -f1)
size_plain=$(du -sb "$work/plain" | cut -f1)

python3 - "$n" "$L" "$D" "$workers" "$in_bytes" "$t_read" "$t_dedupe" "$t_plain" "$size_dedupe" \
  "$size_plain" "$work/dedupe.json" <<'PY'
import json, sys
n, L, D, workers = map(int, sys.argv[1:5])
in_bytes = int(sys.argv[5]); t_read, t_dedupe, t_plain = map(float, sys.argv[6:9])
size_dedupe, size_plain = int(sys.argv[9]), int(sys.argv[10])
rep = json.load(open(sys.argv[11]))
mb = 1e6
print(f"import-lerobot: {n} segments, text {L}x{D} bf16, {workers} workers, input {in_bytes / mb:.1f} MB")
print(f"  read the input (cat):   {t_read:7.2f} s  {in_bytes / mb / t_read:8.1f} MB/s")
print(f"  import, text dedupe:    {t_dedupe:7.2f} s  {in_bytes / mb / t_dedupe:8.1f} MB/s  {n / t_dedupe:8.1f} segments/s"
      f"  ({rep['imported']} imported, {rep['distinct_texts']} distinct texts)")
print(f"  import, no dedupe:      {t_plain:7.2f} s  {in_bytes / mb / t_plain:8.1f} MB/s  {n / t_plain:8.1f} segments/s")
print(f"  output size: {size_dedupe / mb:.1f} MB with dedupe, {size_plain / mb:.1f} MB without "
      f"({size_plain / max(size_dedupe, 1):.1f}x)")
PY
parquet_bench "${1:-build}"
