#!/usr/bin/env bash
# Fails (exit 1) when a tracked C or C++ file differs from what clang-format makes of it with the
# checked-in .clang-format, naming each such file and showing its diff. `clang-format -i FILE`
# fixes one. Run by .ci/run before the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (scripts/setup.sh installs it)" >&2; exit 69; }
bad=0
while IFS= read -r -d '' f; do
  if ! clang-format --style=file "$f" | diff -u --label "$f" --label "$f (clang-format)" "$f" - >/tmp/check_format.$$ 2>&1; then
    echo "not formatted: $f"
    head -40 /tmp/check_format.$$
    bad=$((bad + 1))
  fi
done < <(git ls-files -z -- '*.cc' '*.h' '*.c' '*.cpp')
rm -f /tmp/check_format.$$
if [ "$bad" -gt 0 ]; then
  echo "check_format: $bad file(s) differ from clang-format; run clang-format -i on them" >&2
  exit 1
fi
echo "check_format: every C/C++ file is formatted"
