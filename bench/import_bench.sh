#!/usr/bin/env bash
# LeRobot import benchmark: a generated upstream-style dataset of N one-segment episodes (two
# distinct prompts, text L x Dt bf16, robotwin layout) imported with and without text dedupe.
# Prints segments/s and MB/s of the import, the MB/s of merely reading the same input bytes
# (cat, page cache warm), and the output size with and without dedupe.
# usage: bench/import_bench.sh [BUILD_DIR] [SEGMENTS (500)] [TEXT_LEN (512)] [TEXT_DIM (4096)] [WORKERS (2)]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
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
