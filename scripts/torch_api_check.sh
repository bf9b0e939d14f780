#!/usr/bin/env bash
# Compiles (syntax only) every translation unit that includes libtorch against another libtorch's
# headers: Debian's newer packages (trixie's 2.6, sid's 2.x), with the CUDA code paths on
# (BATON_CUDA, NCCL) when CUDA headers are at hand. It is how the code for libtorch >= 2 and for
# CUDA, which the Debian 1.13 CPU build never compiles, is checked before it meets a GPU machine.
#
#   bash scripts/torch_api_check.sh [--suite trixie|sid] [--cuda DIR] [--build-dir build]
#
# --suite: which Debian suite's libtorch-dev to download (default sid; headers only, unpacked in a
# temporary folder; the machine's packages are untouched). --cuda: a CUDA toolkit whose include/
# holds cuda_runtime_api.h and nccl.h (default /usr/local/cuda when present; none: CPU paths only).
# The list of units and their include folders come from BUILD_DIR/compile_commands.json.
# Exit 0 when every unit compiles, 1 otherwise (the errors are printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
suite=sid cuda="" build_dir="$root/build"
[ -d /usr/local/cuda/include ] && cuda=/usr/local/cuda
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=$2; shift ;;
    --cuda) cuda=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    *) echo "torch_api_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$build_dir/compile_commands.json" ] ||
  { echo "torch_api_check.sh: no $build_dir/compile_commands.json (build first)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/headers" "$work/gen/c10/cuda/impl"
echo "deb http://deb.debian.org/debian $suite main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work" && apt-get "${apt_opts[@]}" download libtorch-dev >/dev/null 2>&1)
dpkg-deb -x "$work"/libtorch-dev_*.deb "$work/headers"
version=$(dpkg-deb -f "$work"/libtorch-dev_*.deb Version)
T=$work/headers/usr/include
# libtorch 2.14 and later refuse C++17 (CMakeLists.txt switches to C++20 for them too).
std=c++17
if printf '%s\n' 2.14 "${version%%+*}" | sort -V -C; then std=c++20; fi

defs=()
incs=(-isystem "$T" -isystem "$T/torch/csrc/api/include")
if [ -n "$cuda" ]; then
  # A CPU build of libtorch does not ship the header its CMake generates for CUDA builds.
  printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' >"$work/gen/c10/cuda/impl/cuda_cmake_macros.h"
  defs+=(-DBATON_CUDA=1 -DUSE_CUDA -DUSE_C10D_NCCL -DUSE_C10D_GLOO -DUSE_DISTRIBUTED)
  incs+=(-isystem "$work/gen" -isystem "$cuda/include")
fi

# Units that use the torch precompiled header, and their own include flags (not torch's).
mapfile -t units < <(python3 - "$build_dir/compile_commands.json" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1])):
    if "cmake_pch" in e["command"] and not e["file"].endswith((".hxx.cxx", "cmake_pch.cxx")):
        print(e["file"])
PY
)
own=(-I"$root" -I"$build_dir")
echo "libtorch-dev $version from $suite, ${#units[@]} units, -std=$std, CUDA paths: ${cuda:-off}"
fail=0
check_one() {
  g++ -std=$std -fsyntax-only -w "${defs[@]}" "${own[@]}" "${incs[@]}" "$1" 2>"$work/$(basename "$1").err" ||
    { echo "FAIL $1"; head -30 "$work/$(basename "$1").err"; return 1; }
}
pids=()
for u in "${units[@]}"; do
  check_one "$u" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}" || fail=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail -eq 0 ] && echo "ok: every unit compiles against libtorch $version${cuda:+ with CUDA ($cuda)}"
exit $fail
