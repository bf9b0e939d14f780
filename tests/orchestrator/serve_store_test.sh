#!/usr/bin/env bash
# `baton serve` and its database taken away underneath it: deleted (rm), or replaced by another
# file renamed over it. Either way serve stops within a sync interval with exit 74 naming the
# file, instead of writing on into the unlinked one while `baton ls` makes a new, empty one.
# No SLURM (--no-reconcile).
# usage: serve_store_test.sh BATON
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
export BATON_HOME=$tmp/home

# serve_until_exit: starts serve, waits until it listens, runs "$@" (what is done to the file),
# then waits up to 10 s for serve to exit; sets $rc and $err.
serve_until_exit() {
  rm -rf "$BATON_HOME" "$tmp/serve.out"  # the last serve's line must not pass for this one's
  "$baton" serve --port 0 --no-reconcile --interval 0.2 >"$tmp/serve.out" 2>"$tmp/serve.err" &
  local pid=$! i
  for ((i = 0; i < 100; i++)); do
    grep -q 'http://' "$tmp/serve.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q 'http://' "$tmp/serve.out" || { kill "$pid"; fail "serve did not start: $(cat "$tmp/serve.err")"; }
  "$@"
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    wait "$pid" || true
    fail "serve kept running after: $*"
  fi
  rc=0
  wait "$pid" || rc=$?
  err=$(cat "$tmp/serve.err")
  checks=$((checks + 1))
}

serve_until_exit rm -f "$BATON_HOME/baton.db"
[ "$rc" -eq 74 ] || fail "serve exited $rc after the database was deleted, expected 74: $err"
expect_in "$err" "$BATON_HOME/baton.db was deleted"
[ ! -e "$BATON_HOME/baton.db" ] || fail "serve wrote a new database after stopping"
checks=$((checks + 1))

replace() { # another file renamed over it, as a restore from a backup does
  cp "$BATON_HOME/baton.db" "$tmp/other.db"
  mv "$tmp/other.db" "$BATON_HOME/baton.db"
}
serve_until_exit replace
[ "$rc" -eq 74 ] || fail "serve exited $rc after the database was replaced, expected 74: $err"
expect_in "$err" "was replaced by another file"

echo "serve_store_test: $checks checks passed"
