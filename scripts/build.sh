#!/usr/bin/env bash
# Configures and builds everything into build/ (Ninja, ccache, precompiled torch header).
#   BATON_BUILD_DIR   build folder (default: build)
#   BATON_CMAKE_ARGS  extra CMake arguments, e.g. "-DCMAKE_PREFIX_PATH=/opt/libtorch -DBATON_CUDA=ON"
#   BATON_FAIL_ON_WARNINGS=1  fail when the compiler or linker printed any warning (.ci/run sets it)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BATON_BUILD_DIR:-build}
# ccache must ignore what differs between PCH builds only in ways that do not matter.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
# Paths under the checkout hash as relative ones, so a fresh clone elsewhere reuses the cache;
# with debug info (RelWithDebInfo) ccache would also hash the build folder's own path unless told
# not to. A cached object's debug info may then name the other checkout's paths.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja ${BATON_CMAKE_ARGS:-} >/dev/null
# A warning is a defect. ccache replays a cached compile's warnings, so a warm cache hides none;
# only files that compile in this invocation are seen (a fresh clone compiles them all).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmake --build "$build_dir" -- -j"${BATON_JOBS:-$(nproc)}" 2>&1 | tee "$log"
if [ "${BATON_FAIL_ON_WARNINGS:-0}" = 1 ] && grep -q 'warning:' "$log"; then
  echo "build: $(grep -c 'warning:' "$log") compiler/linker warning(s); the first:" >&2
  grep -m 5 'warning:' "$log" >&2
  exit 1
fi
