#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS, seeded from the corpus kept here (fuzz/corpus/<target>/)
# and the test fixtures (apache/parquet-testing, the LeRobot episodes). Fails on any crash,
# sanitizer report, leak, timeout (-timeout=10 s an input) or memory blow-up (-rss_limit_mb=2048);
# the input that did it is left in OUT_DIR/crashes/ (make it a regression file under
# tests/data/fuzz/ that a unit test reads). Prints each target's execs and time.
# Usage: fuzz/run.sh SECONDS [OUT_DIR]   (OUT_DIR default build-fuzz/)
set -euo pipefail
secs=${1:?usage: fuzz/run.sh SECONDS [OUT_DIR]}
src=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$src/build-fuzz}
bash "$src/fuzz/build.sh" "$out" >/dev/null
mkdir -p "$out/crashes"
status=0
for t in parquet_file thrift safetensors torch_save; do
  work=$out/corpus/$t
  mkdir -p "$work"
  cp "$src/fuzz/corpus/$t/"* "$work/"
  if [ "$t" = parquet_file ]; then
    find "$src/tests/data/parquet-testing" "$src/tests/data/lerobot_g1_v21" -name '*.parquet' \
      -size -100k -exec cp {} "$work/" \;
  fi
  log=$out/$t.log
  # Fresh inputs found in earlier runs stay in $work (outside the repository).
  if "$out/${t}_fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$out/crashes/$t-" "$work" >"$log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    echo "fuzz: $t: ${execs:-?} execs in ${secs} s, no crash"
  else
    echo "FAIL: fuzz: $t (see $log; the input is in $out/crashes/)"
    grep -m5 -E 'ERROR|SUMMARY|runtime error|==[0-9]+==' "$log" || true
    status=1
  fi
done
exit $status
