#!/usr/bin/env bash
# `baton --version` and `baton-train --version`: the version, the source commit and whether the
# tree was dirty, and for baton-train also libtorch and CUDA. The capture itself
# (schema/build_info.cmake) against throwaway git repositories: a clean checkout, a changed
# tracked file, and a source tree without its own .git inside another repository ("unknown").
# usage: version_test.sh SOURCE_DIR BATON [BATON_TRAIN]
source "$(dirname "$0")/lib.sh"
src=$1 baton=$2 bt=${3:-}
version=$(sed -n 's/^project(baton VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no project version in $src/CMakeLists.txt"

# The binaries: version, then a commit of this repository (or unknown without one).
check_commit_line() {  # LINE
  if [ -e "$src/.git" ]; then
    [[ $1 =~ ^commit\ ([0-9a-f]{40})\ \((clean|dirty)\ tree\)$ ]] || fail "commit line: '$1'"
    git -C "$src" cat-file -e "${BASH_REMATCH[1]}^{commit}" || fail "${BASH_REMATCH[1]} is no commit of $src"
  else
    [ "$1" = "commit unknown (not built from a git checkout)" ] || fail "commit line: '$1'"
  fi
  checks=$((checks + 1))
}
expect_exit 0 "$baton" --version
[ "$(sed -n 1p <<<"$out")" = "baton $version" ] || fail "baton --version line 1: $out"
check_commit_line "$(sed -n 2p <<<"$out")"
if [ -n "$bt" ]; then
  expect_exit 0 "$bt" --version
  [ "$(sed -n 1p <<<"$out")" = "baton-train $version" ] || fail "baton-train --version line 1: $out"
  check_commit_line "$(sed -n 2p <<<"$out")"
  [[ $(sed -n 3p <<<"$out") =~ ^libtorch\ [0-9]+\.[0-9]+ ]] || fail "libtorch line: $out"
  [[ $(sed -n 4p <<<"$out") =~ ^CUDA\ (none\ \(a\ CPU\ build\)|[0-9]+\.[0-9]+\ ) ]] || fail "CUDA line: $out"
  checks=$((checks + 2))
fi

# The capture: what the generated file says for each kind of source tree.
capture() {  # SOURCE_DIR: prints "COMMIT TREE" from the generated file
  cmake -DSOURCE_DIR="$1" -DOUT="$tmp/build_info.cc" -DVERSION=9.9.9 -P "$src/schema/build_info.cmake" ||
    fail "build_info.cmake failed on $1"
  sed -n 's/.*kCommit = "\(.*\)";/\1/p; s/.*kTree = "\(.*\)";/\1/p' "$tmp/build_info.cc" | paste -sd' '
}
repo=$tmp/repo
mkdir -p "$repo/sub"
git -C "$repo" init -q
printf 'a\n' >"$repo/file.txt"
git -C "$repo" add file.txt
git -C "$repo" -c user.name=t -c user.email=t@t commit -qm one
head=$(git -C "$repo" rev-parse HEAD)
printf 'x\n' >"$repo/untracked.txt"  # untracked files do not make the tree dirty
[ "$(capture "$repo")" = "$head clean" ] || fail "clean checkout: $(capture "$repo")"
printf 'b\n' >>"$repo/file.txt"
[ "$(capture "$repo")" = "$head dirty" ] || fail "changed tracked file: $(capture "$repo")"
[ "$(capture "$repo/sub")" = "unknown unknown" ] || fail "no .git of its own: $(capture "$repo/sub")"
grep -q 'kVersion = "9.9.9"' "$tmp/build_info.cc" || fail "the version is not in the file"
checks=$((checks + 4))
echo "version_test: $checks checks passed"
