#!/usr/bin/env bash
# Unpacks the Debian packages that baton-train's build needs besides libtorch (yaml-cpp, xxhash,
# nlohmann-json, CLI11 — headers and static libraries) into a prefix folder, so the trainer can be
# built on a machine that has only a compiler, CUDA and a CUDA libtorch:
#
#   bash scripts/trainer_deps_prefix.sh /tmp/baton-deps          # here (Debian, package access)
#   # copy /tmp/baton-deps and the source tree to the GPU machine, then there:
#   cmake -S . -B build-cuda -DBATON_CUDA=ON -DBATON_STATIC_DEPS=ON \
#     -DBATON_BUILD_ORCHESTRATOR=OFF -DBATON_BUILD_TESTS=OFF \
#     -DCMAKE_PREFIX_PATH="/path/to/libtorch;/tmp/baton-deps/usr"
#   cmake --build build-cuda --target baton-train
#
# The resulting baton-train links yaml-cpp and xxhash statically: it needs only libtorch and CUDA.
set -euo pipefail
prefix=${1:?usage: trainer_deps_prefix.sh PREFIX}
packages=(libyaml-cpp-dev libxxhash-dev nlohmann-json3-dev libcli11-dev libsnappy-dev libzstd-dev)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$prefix"
( cd "$work" && apt-get download "${packages[@]}" >/dev/null )
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
# Debian's CMake configs name absolute /usr paths; point them at the prefix.
grep -rl "/usr/" "$prefix/usr/lib" "$prefix/usr/share" 2>/dev/null | grep -E "\.cmake$" | while read -r f; do
  sed -i "s|\"/usr/|\"$prefix/usr/|g; s|/usr/include|$prefix/usr/include|g; s|/usr/lib|$prefix/usr/lib|g" "$f"
done
echo "unpacked ${packages[*]} into $prefix (use -DCMAKE_PREFIX_PATH=\"/path/to/libtorch;$prefix/usr\")"
