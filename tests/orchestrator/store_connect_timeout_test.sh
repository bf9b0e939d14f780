#!/usr/bin/env bash
# A PostgreSQL store that cannot be reached, through the real `baton` binary: a host that accepts
# the TCP connection but never answers (a listener on 127.0.0.1 that stays silent) and a port
# that refuses. Each is 69 naming host:port, within the connect timeout (5 s unless the URI's
# connect_timeout or PGCONNECT_TIMEOUT says otherwise) plus a bound, and nothing is written: no
# $BATON_HOME, no local database file, no token printed.
# usage: store_connect_timeout_test.sh BATON
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
export BATON_HOME=$tmp/home
unset BATON_STORE PGCONNECT_TIMEOUT
bound=3  # seconds allowed beyond the timeout (process start, a loaded machine)

# The silent server: accepts every connection and holds it open without a byte.
python3 -u - >"$tmp/port" <<'PY' &
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1])
held = []
while True:
    held.append(s.accept()[0])
PY
listener=$!
trap 'kill "$listener" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
silent=$(cat "$tmp/port")
[ -n "$silent" ] || fail "the silent listener did not start"
# A port nothing listens on: bound once, then closed.
refused=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# timed MAX_S CMD...: runs expect_exit 69 CMD..., fails when it took longer than MAX_S seconds;
# leaves the seconds taken in $took.
timed() {
  local max=$1 t0 t1; shift
  t0=$(date +%s.%N)
  expect_exit 69 "$@"
  t1=$(date +%s.%N)
  took=$(python3 -c "print(round($t1 - $t0, 2))")
  python3 -c "import sys; sys.exit(0 if $took <= $max else 1)" ||
    fail "'$*' took $took s, more than $max s"
  checks=$((checks + 1))
  echo "ok: gave up after $took s (at most $max s)"
}
nothing_written() {
  [ ! -e "$BATON_HOME" ] || fail "an unreachable store created $BATON_HOME: $(find "$BATON_HOME")"
  local extra
  extra=$(find "$tmp" -mindepth 1 -not -name port -not -name stderr)
  [ -z "$extra" ] || fail "an unreachable store wrote files: $extra"
  checks=$((checks + 1))
}

# ---- silent host: the default timeout of 5 s ends it (not at once: the server was reached)
timed $((5 + bound)) "$baton" ls --no-sync --store "postgresql://u:hunter2@127.0.0.1:$silent/db"
expect_in "$err" "127.0.0.1:$silent"
case "$err$out" in *hunter2*) fail "the password was printed: $err" ;; esac
python3 -c "import sys; sys.exit(0 if $took >= 4 else 1)" ||
  fail "a silent server was given up after $took s, before the 5 s timeout"
nothing_written

# A write command refuses the same way and prints no token.
timed $((5 + bound)) "$baton" token add alice --store "postgresql://u@127.0.0.1:$silent/db"
expect_in "$err" "127.0.0.1:$silent"
[ -z "$out" ] || fail "token add printed '$out' against an unreachable store"
nothing_written

# The URI's own connect_timeout is honoured (libpq's minimum is 2 s), and so is BATON_STORE.
BATON_STORE="postgresql://u@127.0.0.1:$silent/db?connect_timeout=2" \
  timed $((2 + bound)) "$baton" ls --no-sync
expect_in "$err" "127.0.0.1:$silent"
nothing_written
PGCONNECT_TIMEOUT=2 timed $((2 + bound)) "$baton" ls --no-sync \
  --store "postgres://u@127.0.0.1:$silent/db"
nothing_written

# ---- refused port: 69 at once
timed "$bound" "$baton" ls --no-sync --store "postgresql://u@127.0.0.1:$refused/db"
expect_in "$err" "127.0.0.1:$refused"
nothing_written
echo "store_connect_timeout: $checks checks passed"
