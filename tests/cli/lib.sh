# Helpers for the command-line tests: each check prints one line; the first failure exits 1.
# shellcheck shell=bash
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common/run_folder.sh"
checks=0

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_exit CODE CMD...: runs CMD, keeps its stdout/stderr in $out/$err, checks its exit code.
expect_exit() {
  local want=$1; shift
  local rc=0
  out=$("$@" 2>"$tmp/stderr") || rc=$?
  err=$(cat "$tmp/stderr")
  [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $err"
  checks=$((checks + 1))
  echo "ok: exit $want from: $*"
}

# expect_in TEXT NEEDLE: TEXT contains NEEDLE.
expect_in() {
  case "$1" in
    *"$2"*) checks=$((checks + 1)); echo "ok: output names '$2'" ;;
    *) fail "expected '$2' in: $1" ;;
  esac
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
