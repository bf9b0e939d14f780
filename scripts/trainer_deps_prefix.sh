#!/usr/bin/env bash
# Unpacks the Debian packages that baton-train's build needs besides libtorch (yaml-cpp, xxhash,
# nlohmann-json, CLI11, the parquet codecs, and GoogleTest for the torch unit tests — headers and
# static libraries) into a prefix folder, so the trainer can be built on a machine that has only
# a compiler, CUDA and a CUDA libtorch (scripts/gpu_check.sh does that on a GPU machine):
#
#   bash scripts/trainer_deps_prefix.sh /tmp/baton-deps          # here (Debian, package access)
#   # copy /tmp/baton-deps and the source tree to the GPU machine, then there:
#   cmake -S . -B build-cuda -DBATON_CUDA=ON -DBATON_STATIC_DEPS=ON \
#     -DBATON_BUILD_ORCHESTRATOR=OFF -DBATON_BUILD_TESTS=OFF \
#     -DCMAKE_PREFIX_PATH="/path/to/libtorch;/tmp/baton-deps/usr"
#   cmake --build build-cuda --target baton-train
#
# The resulting baton-train links yaml-cpp and xxhash statically: it needs only libtorch and CUDA.
# The prefix is relocatable: scripts/gpu_check.sh expects it at .gpu-deps/ in the checkout.
set -euo pipefail
prefix=${1:?usage: trainer_deps_prefix.sh PREFIX}
packages=(libyaml-cpp-dev libyaml-cpp0.7 libxxhash-dev nlohmann-json3-dev libcli11-dev libsnappy-dev libzstd-dev
  libgtest-dev)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$prefix"
( cd "$work" && apt-get download "${packages[@]}" >/dev/null )
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
# (libyaml-cpp0.7 only because yaml-cpp's CMake config checks that its shared library exists.)
# The CMake configs used (yaml-cpp, nlohmann-json, CLI11, GTest) find their files relative to
# themselves, so the prefix can move to another path or machine as it is; the codecs and xxhash
# are found by file name (CMakeLists.txt).
echo "unpacked ${packages[*]} into $prefix (use -DCMAKE_PREFIX_PATH=\"/path/to/libtorch;$prefix/usr\")"
