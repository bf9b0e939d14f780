#!/usr/bin/env bash
# `baton store copy` through the real `baton` process against a real PostgreSQL 15 (a throwaway
# server, tests/common/pg_server.sh) and SQLite files. A history made through the real ingest path
# (baton_web_fixture: runs with preemptions, resumes, superseded and non-finite steps,
# checkpoints; owners set as `baton submit` records them; tokens and the node ledger through
# `baton token` and `baton nodes`) goes SQLite → PostgreSQL → SQLite, and `baton ls --json`, every
# run's `baton show --json`, `baton nodes --json` and `baton token list --json` read the same at
# each end. `--owner` keeps only that owner's runs; a non-empty target is refused (73) and left as
# it was; `--merge` adds a second history with new ids beside the first, both apart; merging it
# twice is refused (65) with nothing written. Exits 77 where PostgreSQL 15 is missing.
# usage: store_copy_cli_test.sh BATON FIXTURE
source "$(dirname "$0")/../cli/lib.sh"
baton=$1 fixture=$2
pg_server=$(cd "$(dirname "$0")/../common" && pwd)/pg_server.sh
[ -x "${PG_BIN:-/usr/lib/postgresql/15/bin}/initdb" ] || { echo "skip: no PostgreSQL 15"; exit 77; }
unset BATON_STORE BATON_TEST_STORE
export BATON_HOME=$tmp/home
pgdir=$(mktemp -d /tmp/baton_pg.XXXXXX)
trap 'bash "$pg_server" stop "$pgdir"; rm -rf "$tmp"' EXIT
lab=$(bash "$pg_server" start "$pgdir")
lab2=$(bash "$pg_server" createdb "$lab" lab2)

# snapshot SPEC DIR: what the commands print of the store SPEC, one file each. A live run's time
# figures run to the moment of reading (two reads of one store differ), so its `time` is left out.
snapshot() {
  local spec=$1 dir=$2 id
  mkdir -p "$dir"
  "$baton" --store "$spec" ls --no-sync --json >"$dir/ls.json"
  for id in $(jq -r '.[].id' "$dir/ls.json"); do
    "$baton" --store "$spec" show "$id" --no-sync --json |
      jq 'if (.status | IN("PENDING", "RUNNING", "REQUEUED")) then del(.time) else . end' \
        >"$dir/show-$id.json"
  done
  "$baton" --store "$spec" nodes --no-sync --json >"$dir/nodes.json"
  "$baton" --store "$spec" token list --json >"$dir/tokens.json"
}
# same DIR1 DIR2 WHAT: the two snapshots are identical, file for file.
same() {
  diff -r "$1" "$2" >"$tmp/diff" || fail "$3: $(head -20 "$tmp/diff")"
  checks=$((checks + 1))
  echo "ok: $3"
}

# ---- a history in SQLite
a=$tmp/a.db
"$fixture" --db "$a" --runs-root "$tmp/runs" --extra-runs 2 >/dev/null
sqlite3 "$a" "UPDATE runs SET owner = CASE WHEN id % 2 = 1 THEN 'alice' ELSE 'bob' END,
              cluster = 'north'"
expect_exit 0 "$baton" --store "sqlite:$a" token add alice
expect_exit 0 "$baton" --store "sqlite:$a" token add boss --admin
expect_exit 0 "$baton" --store "sqlite:$a" nodes exclude node-7 --for 6h --reason "fan noise"
snapshot "sqlite:$a" "$tmp/s.a"
runs=$(jq length "$tmp/s.a/ls.json")
[ "$runs" -ge 5 ] || fail "the fixture made $runs runs"
jq -e -s 'map(.steps) | add > 0' "$tmp"/s.a/show-*.json >/dev/null || fail "no run has steps"
jq -e -s 'map(.superseded_steps) | add > 0' "$tmp"/s.a/show-*.json >/dev/null ||
  fail "the history has no superseded steps"

# ---- SQLite → PostgreSQL → SQLite
expect_exit 0 "$baton" store copy --from "sqlite:$a" --to "$lab"
expect_in "$out" "steps: "
snapshot "$lab" "$tmp/s.lab"
same "$tmp/s.a" "$tmp/s.lab" "sqlite → postgresql reads the same"
b=$tmp/b.db
expect_exit 0 "$baton" store copy --from "$lab" --to "sqlite:$b"
snapshot "sqlite:$b" "$tmp/s.b"
same "$tmp/s.a" "$tmp/s.b" "postgresql → sqlite reads the same"
[ "$(sqlite3 "$a" 'SELECT COUNT(*) FROM step_rollups')" = \
  "$(sqlite3 "$b" 'SELECT COUNT(*) FROM step_rollups')" ] || fail "rollups lost on the way"

# ---- one owner's runs
c=$tmp/alice.db
expect_exit 0 "$baton" store copy --from "$lab" --to "sqlite:$c" --owner alice
snapshot "sqlite:$c" "$tmp/s.c"
want=$(jq -c '[.[] | select(.owner == "alice") | .id]' "$tmp/s.a/ls.json")
[ "$(jq -c '[.[].id]' "$tmp/s.c/ls.json")" = "$want" ] ||
  fail "--owner alice kept $(jq -c '[.[].id]' "$tmp/s.c/ls.json"), not $want"
[ "$(jq -c 'map(select(.owner == "alice"))' "$tmp/s.a/ls.json")" = "$(jq -c . "$tmp/s.c/ls.json")" ] ||
  fail "alice's runs list differently"
for id in $(jq -r '.[]' <<<"$want"); do
  cmp -s "$tmp/s.a/show-$id.json" "$tmp/s.c/show-$id.json" || fail "show $id differs under --owner"
done
[ "$(jq length "$tmp/s.c/tokens.json")" = 0 ] || fail "--owner copied the server's tokens"
checks=$((checks + 3))

# ---- a non-empty target is refused and left as it was
expect_exit 73 "$baton" store copy --from "sqlite:$a" --to "$lab"
expect_in "$err" "target $lab is not empty"
expect_in "$err" "--merge"
expect_exit 73 "$baton" store copy --from "$lab" --to "sqlite:$b"
expect_in "$err" "target sqlite:$b is not empty"
snapshot "$lab" "$tmp/s.lab2"
same "$tmp/s.a" "$tmp/s.lab2" "the refused target is unchanged"

# ---- --merge: a second history beside the first
d=$tmp/d.db
"$fixture" --db "$d" --runs-root "$tmp/runs-d" --extra-runs 1 --no-compare >/dev/null
sqlite3 "$d" "UPDATE runs SET owner = 'carol'"
expect_exit 0 "$baton" --store "sqlite:$d" nodes exclude node-7 --for 1h --reason "carol's view"
snapshot "sqlite:$d" "$tmp/s.d"
expect_exit 0 "$baton" store copy --from "sqlite:$d" --to "$lab" --merge
expect_in "$out" "merged with new ids"
snapshot "$lab" "$tmp/s.m"
# The first history is untouched: the same runs under the same ids.
for id in $(jq -r '.[].id' "$tmp/s.a/ls.json"); do
  cmp -s "$tmp/s.a/show-$id.json" "$tmp/s.m/show-$id.json" || fail "merge changed run $id"
done
checks=$((checks + 1))
# Each merged run: found by its folder, a new id, and after mapping its ids the same show.
mapped='[]'
for sid in $(jq -r '.[].id' "$tmp/s.d/ls.json"); do
  dir=$(jq -r .run_dir "$tmp/s.d/show-$sid.json")
  tid=$(jq -r --arg d "$dir" '.[] | select(.run_dir == $d) | .id' "$tmp/s.m/ls.json")
  [ -n "$tid" ] || fail "run $sid of the merged history is not in the target"
  jq -e --argjson t "$tid" 'all(.[]; .id != $t)' "$tmp/s.a/ls.json" >/dev/null ||
    fail "merged run $sid took id $tid of the first history"
  pairs=$(jq -n -c --slurpfile s "$tmp/s.d/show-$sid.json" --slurpfile t "$tmp/s.m/show-$tid.json" \
    '[$s[0].time.attempts // [], $t[0].time.attempts // []] | transpose | map([.[0].attempt_id, .[1].attempt_id])')
  jq -S --argjson t "$tid" --argjson m "$pairs" '.id = $t | .run_id = $t |
      if .time then .time.attempts |= map(.attempt_id as $a |
        .attempt_id = ([$m[] | select(.[0] == $a)][0][1])) else . end' \
    "$tmp/s.d/show-$sid.json" >"$tmp/want.json"
  jq -S . "$tmp/s.m/show-$tid.json" >"$tmp/got.json"
  cmp -s "$tmp/want.json" "$tmp/got.json" ||
    fail "merged run $sid (now $tid) shows differently: $(diff "$tmp/want.json" "$tmp/got.json" | head)"
  mapped=$(jq -c --argjson s "$sid" --argjson t "$tid" '. + [[$s, $t]]' <<<"$mapped")
done
checks=$((checks + 1))
# ls: the merged runs (newest, so first) then the first history, each as before.
jq -c --argjson m "$mapped" 'map(.id as $s | ([$m[] | select(.[0] == $s)][0][1]) as $t |
    .id = $t | .run_id = $t) | sort_by(-.id)' "$tmp/s.d/ls.json" >"$tmp/want-ls.json"
jq -c -s '.[0] + .[1]' "$tmp/want-ls.json" "$tmp/s.a/ls.json" >"$tmp/want-all.json"
[ "$(jq -c . "$tmp/s.m/ls.json")" = "$(cat "$tmp/want-all.json")" ] ||
  fail "ls after --merge: $(diff <(jq . "$tmp/want-all.json") <(jq . "$tmp/s.m/ls.json") | head)"
[ "$(jq '[.[] | select(.host == "node-7")] | length' "$tmp/s.m/nodes.json")" = 1 ] ||
  fail "node-7 is two rows after the merge"
checks=$((checks + 2))
# Merging the same history again: its runs are there already; nothing written.
expect_exit 65 "$baton" store copy --from "sqlite:$d" --to "$lab" --merge
expect_in "$err" "is already in the target"
snapshot "$lab" "$tmp/s.m2"
same "$tmp/s.m" "$tmp/s.m2" "the refused merge wrote nothing"

# ---- the merged lab handed to one person, and to another PostgreSQL database
e=$tmp/carol.db
expect_exit 0 "$baton" store copy --from "$lab" --to "sqlite:$e" --owner carol
[ "$(jq -c '[.[].owner] | unique' <<<"$("$baton" --store "sqlite:$e" ls --no-sync --json)")" = \
  '["carol"]' ] || fail "--owner carol copied other owners' runs"
expect_exit 0 "$baton" store copy --from "$lab" --to "$lab2"
snapshot "$lab2" "$tmp/s.lab2db"
same "$tmp/s.m" "$tmp/s.lab2db" "postgresql → postgresql reads the same"

# ---- bad input
expect_exit 64 "$baton" store copy --from "mysql://x" --to "sqlite:$tmp/x.db"
expect_exit 64 "$baton" store copy --from "sqlite:$a" --to "sqlite:$a"
expect_exit 74 "$baton" store copy --from "sqlite:$tmp/none.db" --to "sqlite:$tmp/x.db"
[ ! -e "$tmp/x.db" ] || fail "a refused copy created its target"
echo "all $checks checks passed"
