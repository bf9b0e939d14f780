#!/usr/bin/env bash
# Store bench: the SQLite file and a PostgreSQL server side by side in one run, each measurement
# on a fresh database of each backend (build/bench/baton-bench-store, store_bench.h).
#   1. ingest 1 writer: step events through the real ingest path (IngestRun, as `baton watch`
#      runs it, series rollups on), appended and ingested a batch at a time
#   2. ingest 16 writers: 16 processes, one run each, at once; rows/s in all and the p99 of one
#      pass's commit (the wait for the write lock, the chunk's transaction, its time buckets)
#   3. series and runs page over a large history: T step rows in N runs, one run of M rows, made
#      in bulk through the store (one statement per run, not one event at a time through files);
#      the web API's own service timed on lr,loss and all 9 chart keys of the big run, and on the
#      runs page (50 of N)
#   4. kill -9: 4 of 16 ingesters SIGKILLed in the middle of a chunk and restarted; every run's
#      rows then counted against the step events its file holds
# PostgreSQL is a throwaway server started as the tests start theirs (tests/common/pg_server.sh:
# initdb + pg_ctl in a temp folder, a Unix socket, fsync and synchronous_commit off).
#   bench/store_bench.sh [BUILD_DIR]    (default build/; needs baton-bench-store built)
# Sizes (the defaults are the sizes the goals are stated for):
#   BATON_BENCH_INGEST_ROWS (200000, the 1-writer run), BATON_BENCH_WRITER_ROWS (20000 per writer
#   of 16), BATON_BENCH_BATCH (1000 step events a pass), BATON_BENCH_KILL_ROWS (10000 per writer
#   of the kill run), BATON_BENCH_STORED_ROWS (20000000), BATON_BENCH_SERIES_ROWS (1000000),
#   BATON_BENCH_RUNS (10000), BATON_BENCH_REPEATS (10).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
build=${1:-build}
tool=$build/bench/baton-bench-store
[ -x "$tool" ] || { echo "store_bench: $tool missing: bash scripts/build.sh first"; exit 1; }
[ -x /usr/lib/postgresql/15/bin/initdb ] || { echo "store_bench: PostgreSQL 15 missing (scripts/setup.sh)"; exit 1; }
ingest_rows=${BATON_BENCH_INGEST_ROWS:-200000}
writer_rows=${BATON_BENCH_WRITER_ROWS:-20000}
batch=${BATON_BENCH_BATCH:-1000}
kill_rows=${BATON_BENCH_KILL_ROWS:-10000}
stored=${BATON_BENCH_STORED_ROWS:-20000000}
series_rows=${BATON_BENCH_SERIES_ROWS:-1000000}
runs=${BATON_BENCH_RUNS:-10000}
repeats=${BATON_BENCH_REPEATS:-10}

tmp=$(mktemp -d /tmp/baton-store-bench.XXXXXX)
pgdir=$(mktemp -d /tmp/baton_pg.XXXXXX)  # its own folder: pg_server.sh hands it to postgres
cleanup() {
  bash tests/common/pg_server.sh stop "$pgdir" || true
  rm -rf "$tmp"
}
trap cleanup EXIT
t0=$(date +%s.%N)
uri=$(bash tests/common/pg_server.sh start "$pgdir")
t1=$(date +%s.%N)
python3 -c "print(f'postgresql: throwaway server (pg_server.sh) started in {$t1 - $t0:.1f} s')"

# measure NAME BACKEND ARGS...: runs the tool on a fresh database of BACKEND, keeps its JSON line.
measure() {
  local name=$1 backend=$2 store; shift 2
  if [ "$backend" = sqlite ]; then
    store=sqlite:$tmp/$name.db
  else
    store=$(bash tests/common/pg_server.sh createdb "$uri" "$name")
  fi
  mkdir -p "$tmp/$name"
  "$tool" "$1" --store "$store" --dir "$tmp/$name" "${@:2}" >"$tmp/$name.json"
  rm -rf "${tmp:?}/$name" "$tmp/$name.db" "$tmp/$name.db-wal" "$tmp/$name.db-shm"
}

echo "== ingest: step events through IngestRun, $batch a pass, series rollups on"
for b in sqlite postgresql; do
  measure "one_$b" "$b" ingest --writers 1 --rows "$ingest_rows" --batch "$batch"
  measure "many_$b" "$b" ingest --writers 16 --rows "$writer_rows" --batch "$batch"
  measure "kill_$b" "$b" ingest --writers 16 --rows "$kill_rows" --batch "$batch" --kill 4
done
echo "== history: $stored step rows in $runs runs (one of $series_rows rows), filled in bulk"
echo "   through the store (bulk_steps.h: one statement per run; not through event files)"
for b in sqlite postgresql; do
  measure "history_$b" "$b" history --runs "$runs" --rows "$stored" --big-rows "$series_rows" \
    --repeats "$repeats"
done

python3 - "$tmp" <<'PY'
import json, sys

d = sys.argv[1]
r = {name: json.load(open(f"{d}/{name}.json")) for name in
     [f"{k}_{b}" for k in ("one", "many", "kill", "history") for b in ("sqlite", "postgresql")]}


def size(n):
    for unit, div in (("M", 1_000_000), ("k", 1000)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def goal(ok, text):
    return f"   [goal {text}: {'met' if ok else 'MISSED'}]"


for b in ("sqlite", "postgresql"):
    for k in ("one", "many", "kill"):
        x = r[f"{k}_{b}"]
        print(f"   {b:10} {k:4}: {x['writers']} writer(s), {x['rows']} rows in {x['seconds']:.1f} s, "
              f"{x['passes']} passes, commit p50 {x['p50_ms']:.1f} ms / p99 {x['p99_ms']:.1f} ms")
    h = r[f"history_{b}"]
    print(f"   {b:10} history: filled in {h['fill_seconds']:.0f} s; series from {h['series_source']}, "
          f"{h['series_rows']} rows, {h['series_points']} points a key; runs page "
          f"{h['page_runs']} of {h['page_total']}")

s1, p1 = r["one_sqlite"]["rows_per_s"], r["one_postgresql"]["rows_per_s"]
print(f"ingest 1 writer: {s1:,.0f} step rows/s (sqlite) vs {p1:,.0f} (postgresql)"
      + goal(p1 >= 30000 and p1 >= 0.8 * s1,
             f"postgresql >= 30k rows/s and >= 0.8x sqlite; {p1 / s1:.2f}x"))
ms, mp = r["many_sqlite"], r["many_postgresql"]
print(f"ingest 16 writers: {mp['rows_per_s']:,.0f} rows/s, p99 commit {mp['p99_ms']:.0f} ms "
      f"(postgresql) vs {ms['rows_per_s']:,.0f} rows/s, p99 commit {ms['p99_ms']:.0f} ms (sqlite)"
      + goal(mp["rows_per_s"] >= 50000 and mp["p99_ms"] <= 250,
             ">= 50k rows/s, p99 <= 250 ms, postgresql"))
hs, hp = r["history_sqlite"], r["history_postgresql"]
label = f"{size(hs['big_rows'])}-row run, {size(hs['rows'])} rows stored"
print(f"series lr,loss, {label}: {hs['series2_ms']:.1f} ms (sqlite) vs {hp['series2_ms']:.1f} ms "
      f"(postgresql)" + goal(max(hs["series2_ms"], hp["series2_ms"]) <= 100, "<= 100 ms on both"))
print(f"series all 9 keys, {label}: {hs['series9_ms']:.1f} ms (sqlite) vs {hp['series9_ms']:.1f} ms "
      f"(postgresql)" + goal(max(hs["series9_ms"], hp["series9_ms"]) <= 150, "<= 150 ms on both"))
print(f"runs page, 50 of {hs['runs']} runs: {hs['runs_page_ms']:.1f} ms vs {hp['runs_page_ms']:.1f} ms"
      "   (sqlite vs postgresql)")
for b in ("sqlite", "postgresql"):
    k = r[f"kill_{b}"]
    print(f"kill -9 of {k['killed']} of {k['writers']} ingesters mid-chunk, restarted: "
          f"lost {k['lost']}, duplicated {k['duplicated']}   ({b}; {k['events']} step events)")
PY
