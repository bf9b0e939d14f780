#!/usr/bin/env bash
# A lab's history through the real `baton` process: `ls` shows each run's owner and filters by
# owner and cluster (its JSON a superset of before); `baton token add|list|revoke`; `baton serve
# --auth tokens` and `--auth proxy` answer 401 without an identity, 403 to a user who does not own
# the run, 200 to its owner (a run without a job: no scancel reaches the shared cluster), each
# action audited; the proxy's header counts only from a trusted address; a slurm.cluster that the
# local SLURM contradicts is refused (when a SLURM answers). Nothing is submitted (--no-sync,
# --no-reconcile, --dry-run).
# usage: team_cli_test.sh BATON FIXTURE
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/../common/store_sql.sh"
baton=$1 fixture=$2
export BATON_HOME=$tmp/home
mkdir -p "$BATON_HOME"
db=$BATON_HOME/baton.db
"$fixture" --db "${BATON_STORE:-$db}" --runs-root "$tmp/runs" --extra-runs 2 --no-compare >/dev/null
# Owners and clusters as `baton submit` records them. Run 4 (the live one) is alice's and has no
# job, so cancelling it never runs scancel.
live=$(store_sql "$db" "SELECT id FROM runs WHERE status = 'RUNNING' ORDER BY id LIMIT 1")
[ -n "$live" ] || fail "the fixture has no live run"
store_sql "$db" "UPDATE runs SET owner = 'alice', cluster = 'north' WHERE id = 1;
               UPDATE runs SET owner = 'bob', cluster = 'south' WHERE id = 2;
               UPDATE runs SET owner = 'alice', cluster = 'south', job_id = '' WHERE id = $live;"

# ---- ls: the owner column and the filters
expect_exit 0 "$baton" ls --no-sync
header=$(head -1 <<<"$out")
expect_in "$header" "NAME  "
expect_in "$header" "OWNER"
[ "$(awk 'NR == 1 {print $3}' <<<"$out")" = OWNER ] || fail "OWNER is not the third column: $header"
expect_in "$(grep -E '^1 ' <<<"$out")" "alice"
expect_exit 0 "$baton" ls --no-sync --owner alice --json
[ "$(jq -r '[.[].run_id] | sort | map(tostring) | join(",")' <<<"$out")" = "1,$live" ] ||
  fail "ls --owner alice listed $(jq -c '[.[].run_id]' <<<"$out")"
for key in run_id id name status owner cluster partition attempts last_step created_at; do
  jq -e --arg k "$key" 'all(.[]; has($k))' <<<"$out" >/dev/null || fail "ls --json lost key $key"
done
checks=$((checks + 1))
expect_exit 0 "$baton" ls --no-sync --owner alice --cluster south --json
[ "$(jq -r '.[].run_id' <<<"$out")" = "$live" ] || fail "ls --owner alice --cluster south: $out"
expect_exit 0 "$baton" ls --no-sync --cluster nowhere --json
[ "$(jq length <<<"$out")" = 0 ] || fail "ls --cluster nowhere listed runs: $out"
checks=$((checks + 3))

# ---- slurm.cluster against the local SLURM's ClusterName (only where a SLURM answers; a dry run
# submits nothing)
if local_cluster=$(scontrol show config 2>/dev/null | awk '$1 == "ClusterName" {print $3}') &&
  [ -n "$local_cluster" ]; then
  mkdir -p "$tmp/data"
  printf 'run: {name: c, steps: 2}\ndata: {path: %s}\nslurm: {cluster: not-%s}\n' "$tmp/data" \
    "$local_cluster" >"$tmp/other.yaml"
  expect_exit 78 "$baton" submit "$tmp/other.yaml" --dry-run
  expect_in "$err" "slurm.cluster: 'not-$local_cluster', but this host's SLURM is cluster '$local_cluster'"
  printf 'run: {name: c, steps: 2}\ndata: {path: %s}\nslurm: {cluster: %s}\n' "$tmp/data" \
    "$local_cluster" >"$tmp/same.yaml"
  expect_exit 0 "$baton" submit "$tmp/same.yaml" --dry-run
else
  echo "skip: no SLURM answers scontrol show config (slurm.cluster check)"
fi

# ---- tokens
expect_exit 0 "$baton" token add alice --json
[ "$(jq -r .user <<<"$out")" = alice ] || fail "token add --json: $out"
alice=$(jq -r .token <<<"$out")
[ ${#alice} -eq 64 ] || fail "alice's token is ${#alice} characters"
expect_exit 0 "$baton" token add bob
bob=$(tail -1 <<<"$out")
expect_exit 0 "$baton" token add boss --admin --json
boss=$(jq -r .token <<<"$out")
expect_exit 64 "$baton" token add alice
expect_in "$err" "already has a token"
expect_exit 64 "$baton" token add "a b"
expect_exit 0 "$baton" token list
expect_in "$out" "boss"
grep -q "$alice" <<<"$out" && fail "token list shows a secret"
cat "$db"* | grep -qa "$alice" && fail "the database holds alice's token in clear"
checks=$((checks + 2))
expect_exit 0 "$baton" token list --json
[ "$(jq -r '[.[] | select(.admin)] | .[0].user' <<<"$out")" = boss ] || fail "token list --json: $out"
expect_exit 0 "$baton" token revoke bob
expect_exit 66 "$baton" token revoke bob
expect_exit 0 "$baton" token add bob --json
bob=$(jq -r .token <<<"$out")

# ---- serve: start_serve ARGS... (sets $url, $pid)
start_serve() {
  rm -f "$tmp/serve.out"  # the last serve's address must not pass for this one's
  "$baton" serve --port 0 --no-reconcile --interval 0.5 "$@" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  pid=$!
  local i
  for ((i = 0; i < 100; i++)); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.out" 2>/dev/null | head -1 || true)
    [ -n "$url" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "serve $* did not start: $(cat "$tmp/serve.err")"
}
stop_serve() { kill "$pid"; wait "$pid" || true; }
# http_status METHOD PATH [CURL ARGS...]: the status code; the body in $tmp/body.
http_status() {
  local method=$1 path=$2
  shift 2
  curl -s -o "$tmp/body" -w '%{http_code}' -X "$method" "$@" "$url$path" || true
}
expect_status() {
  local want=$1
  shift
  local got
  got=$(http_status "$@")
  [ "$got" = "$want" ] || fail "$* answered $got, expected $want: $(cat "$tmp/body")"
  checks=$((checks + 1))
  echo "ok: $want from $*"
}

expect_exit 64 "$baton" serve --auth bogus
expect_exit 64 "$baton" serve --auth proxy
expect_in "$err" "--trust-proxy-header"
expect_exit 64 "$baton" serve --trusted-proxy 127.0.0.1

start_serve --auth tokens
expect_status 401 GET /api/runs
expect_status 200 GET /api/runs -H "Authorization: Bearer $bob"
expect_status 200 GET "/api/runs?owner=alice&cluster=south" -H "Authorization: Bearer $bob"
[ "$(jq -r '.runs[].id' "$tmp/body")" = "$live" ] || fail "owner/cluster filter: $(cat "$tmp/body")"
expect_status 401 POST "/api/runs/$live/cancel"
expect_status 401 POST "/api/runs/$live/cancel?token=$alice"
expect_status 403 POST "/api/runs/$live/cancel" -H "Authorization: Bearer $bob"
expect_status 200 POST "/api/runs/$live/cancel" -H "Authorization: Bearer $alice"
[ "$(jq -r .status "$tmp/body")" = CANCELLED ] || fail "cancel answered $(cat "$tmp/body")"
expect_status 200 GET "/api/runs/$live/actions" -H "Authorization: Bearer $alice"
[ "$(jq -r '[.actions[] | "\(.user):\(.action):\(.result):\(.http_status)"] | join(" ")' "$tmp/body")" \
  = "alice:cancel:ok:200 bob:cancel:denied:403" ] || fail "audit: $(cat "$tmp/body")"
stop_serve
[ "$(store_sql "$db" "SELECT status FROM runs WHERE id = $live")" = CANCELLED ] || fail "not cancelled"
checks=$((checks + 2))

# The proxy: its header from 127.0.0.1 (trusted) counts; from an untrusted address it does not.
start_serve --auth proxy --trust-proxy-header X-Remote-User --trusted-proxy 127.0.0.1
expect_status 401 GET /api/runs
expect_status 200 GET /api/runs -H "X-Remote-User: carol"
expect_status 403 POST /api/runs/1/resume -H "X-Remote-User: carol" -H "X-Requested-With: baton"
stop_serve
start_serve --auth proxy --trust-proxy-header X-Remote-User --trusted-proxy 10.9.9.9
expect_status 401 GET /api/runs -H "X-Remote-User: alice"
stop_serve

# Without --auth: as before (loopback, no token, read-only).
start_serve
expect_status 200 GET /api/runs
expect_status 405 POST "/api/runs/$live/cancel"
stop_serve
echo "team_cli_test: $checks checks passed"
