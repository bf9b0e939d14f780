#!/usr/bin/env bash
# A throwaway PostgreSQL 15 for the tests: initdb + pg_ctl in a temp folder, as the unprivileged
# `postgres` user when run as root (initdb refuses root), listening only on a Unix socket.
#
#   pg_server.sh start DIR   initialises DIR, starts the server, prints its URI (one line)
#   pg_server.sh stop DIR    stops the server and removes DIR
#   pg_server.sh run CMD...  starts a server in a new temp folder, runs CMD with BATON_STORE and
#                            BATON_TEST_STORE set to its URI, stops it; exits with CMD's status
#   pg_server.sh createdb URI NAME   creates database NAME on the server of URI, prints its URI
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

as_owner() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local dir=$1
  mkdir -p "$dir"
  [[ $(id -u) == 0 ]] && chown postgres: "$dir" && chmod 700 "$dir"
  local user
  user=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
  # trust on the socket only: the folder is private to the owner, and nothing listens on TCP.
  as_owner "$PG_BIN/initdb" -D "$dir/data" -U "$user" -A trust -E UTF8 --no-locale --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  # One role that must log in with a password, for the bad-credentials tests.
  sed -i '1i local all baton_pw scram-sha-256' "$dir/data/pg_hba.conf"
  as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -s \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off \
-c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start \
    || { cat "$dir/server.log" >&2; return 1; }
  as_owner "$PG_BIN/createdb" -h "$dir" -U "$user" baton_test
  as_owner "$PG_BIN/psql" -X -q -h "$dir" -U "$user" -d baton_test \
    -c "CREATE ROLE baton_pw LOGIN PASSWORD 'right-pw'" >/dev/null
  echo "postgresql://$user@/baton_test?host=$dir"
}

stop() {
  local dir=$1
  if [[ -d $dir/data ]]; then
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -s stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case ${1:-} in
  start) start "$2" ;;
  stop) stop "$2" ;;
  createdb)
    uri=$2 name=$3
    host=${uri#*host=}; host=${host%%&*}; user=${uri#postgresql://}; user=${user%%@*}
    as_owner "$PG_BIN/createdb" -h "$host" -U "$user" "$name"
    echo "postgresql://$user@/$name?host=$host" ;;
  run)
    shift
    dir=$(mktemp -d /tmp/baton_pg.XXXXXX)
    trap 'stop "$dir"' EXIT
    uri=$(start "$dir")
    rc=0
    BATON_STORE=$uri BATON_TEST_STORE=$uri "$@" || rc=$?
    exit $rc ;;
  *) echo "usage: $0 start DIR | stop DIR | run CMD... | createdb URI NAME" >&2; exit 64 ;;
esac
