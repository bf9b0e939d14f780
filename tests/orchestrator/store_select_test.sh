#!/usr/bin/env bash
# Choosing the store through the real `baton` binary: BATON_STORE and `--store` (before or after
# the command) with sqlite:PATH; another scheme or a malformed URI is 64 naming it; a server that
# is not there is 69 naming host:port; a password in a URI is never printed. Under the `pg.`
# entry (BATON_STORE names a throwaway PostgreSQL, tests/common/pg_server.sh) also: commands work
# on it, bad credentials are 69 naming the user with libpq's reason, a newer schema is 65.
# usage: store_select_test.sh BATON
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/../common/store_sql.sh"
baton=$1
export BATON_HOME=$tmp/home
pg=${BATON_STORE:-}
no_password() { case "$1" in *hunter2*) fail "the password was printed: $1" ;; esac; }

# ---- SQLite by name, both spellings of --store
unset BATON_STORE
expect_exit 0 "$baton" --store "sqlite:$tmp/a.db" ls --no-sync
[ -s "$tmp/a.db" ] || fail "--store sqlite:PATH made no database at PATH"
expect_exit 0 "$baton" ls --no-sync --store "sqlite:$tmp/b.db"
[ -s "$tmp/b.db" ] || fail "--store after the command was not used"
BATON_STORE=sqlite:$tmp/c.db expect_exit 0 "$baton" ls --no-sync
[ -s "$tmp/c.db" ] || fail "BATON_STORE=sqlite:PATH was not used"
[ ! -e "$BATON_HOME/baton.db" ] || fail "a named store still created \$BATON_HOME/baton.db"

# ---- bad input: 64 naming it, nothing created
expect_exit 64 "$baton" ls --no-sync --store "mysql://u:hunter2@db.example/x"
expect_in "$err" "mysql"
no_password "$err$out"
expect_exit 64 "$baton" ls --no-sync --store "postgresql://u:hunter2@host/db?bogus=1"
expect_in "$err" "postgresql://u:***@host/db?bogus=1"
no_password "$err$out"
expect_exit 64 "$baton" ls --no-sync --store "postgres://u@host:port/db"
expect_in "$err" "port"
[ ! -e "$BATON_HOME/baton.db" ] || fail "a refused store created \$BATON_HOME/baton.db"

# ---- a server that is not there: 69 naming host:port (refused at once on loopback)
expect_exit 69 "$baton" ls --no-sync --store "postgresql://u:hunter2@127.0.0.1:1/db"
expect_in "$err" "127.0.0.1:1"
no_password "$err$out"
# A SLURM-free command that writes (token add) refuses the same way and prints no token.
expect_exit 69 "$baton" token add alice --store "postgresql://u@127.0.0.1:1/db"

# ---- newer schema on SQLite: 65
"$baton" --store "sqlite:$tmp/new.db" ls --no-sync >/dev/null
sqlite3 "$tmp/new.db" "PRAGMA user_version = 999"
expect_exit 65 "$baton" --store "sqlite:$tmp/new.db" ls --no-sync
expect_in "$err" "newer"

if [ -n "$pg" ]; then
  export BATON_STORE=$pg
  expect_exit 0 "$baton" token add alice --json
  expect_exit 0 "$baton" token list
  expect_in "$out" "alice"
  [ "$(store_sql "" "SELECT COUNT(*) FROM api_tokens")" = 1 ] || fail "the token is not in PostgreSQL"
  # Bad credentials: role baton_pw logs in by password (pg_server.sh); libpq's reason, the user.
  socket=${pg#*host=}
  PGPASSWORD=hunter2 expect_exit 69 "$baton" ls --no-sync --store "postgresql://baton_pw@/baton_test?host=$socket"
  expect_in "$err" "baton_pw"
  expect_in "$err" "password authentication failed"
  no_password "$err$out"
  expect_exit 69 "$baton" ls --no-sync --store "postgresql://baton_pw:hunter2@/baton_test?host=$socket"
  no_password "$err$out"
  # A newer schema: 65, as on SQLite.
  store_sql "" "UPDATE baton_schema_version SET version = 999"
  expect_exit 65 "$baton" ls --no-sync
  expect_in "$err" "newer"
fi
echo "store_select: $checks checks passed"
