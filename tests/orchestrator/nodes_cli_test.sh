#!/usr/bin/env bash
# `baton nodes`, `baton nodes exclude|readmit` and `baton preflight` from the command line: the
# listing (table and JSON), hand exclusion and re-admission (audited, on probation), bad input
# (a node name that is not a host name: 64; a bad --for: 64; an unknown node: 66; a node policy
# whose pattern does not compile: 78 naming it), and the preflight's verdict on this machine and
# under the fault-injection hook (76, an incident file). Needs no SLURM.
# usage: nodes_cli_test.sh BATON
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
export BATON_HOME=$tmp/home
unset BATON_NODES_CONFIG BATON_PREFLIGHT_FAIL_NODES

expect_exit 0 "$baton" nodes --json
[ "$(printf '%s' "$out" | tr -d ' \n')" = "[]" ] || fail "an empty ledger lists: $out"

# Bad input: nothing is written for any of these.
expect_exit 64 "$baton" nodes exclude 'n1;reboot' --for 6h
expect_in "$err" "is not a valid node name"
expect_exit 64 "$baton" nodes exclude "$(printf 'a%.0s' $(seq 300))" --for 6h
expect_exit 64 "$baton" nodes exclude node-7 --for 1w
expect_in "$err" "--for: '1w' is not a duration"
expect_exit 64 "$baton" nodes exclude node-7 --for=-1h
expect_exit 64 "$baton" nodes exclude node-7
expect_exit 66 "$baton" nodes readmit node-7
expect_in "$err" "no node 'node-7' in the node ledger"
expect_exit 0 "$baton" nodes --json --no-sync
[ "$(printf '%s' "$out" | tr -d ' \n')" = "[]" ] || fail "bad input wrote to the ledger: $out"

# By hand: excluded for 6 h, audited under this user; then re-admitted on probation.
expect_exit 0 "$baton" nodes exclude node-7 --for 6h --reason "fan noise" --partition debug
expect_in "$out" "node node-7 (debug) excluded until"
expect_exit 0 "$baton" nodes --json
[ "$(jq -r '.[0].host' <<<"$out")" = node-7 ] || fail "listing: $out"
[ "$(jq -r '.[0].status' <<<"$out")" = "excluded by $(id -un)" ] || fail "status: $out"
[ "$(jq -r '.[0].partition' <<<"$out")" = debug ] || fail "partition: $out"
until=$(jq -r '.[0].excluded_until' <<<"$out")
now=$(date +%s)
awk -v u="$until" -v n="$now" 'BEGIN { d = u - n; exit !(d > 6*3600 - 60 && d <= 6*3600 + 1) }' ||
  fail "excluded until $until, not now + 6 h ($now)"
[ "$(jq -r '.[0].actions[0].action' <<<"$out")" = exclude ] || fail "not audited: $out"
expect_in "$(jq -r '.[0].actions[0].message' <<<"$out")" "fan noise"
expect_exit 0 "$baton" nodes
expect_in "$out" "node-7"
expect_in "$out" "excluded by"
expect_exit 0 "$baton" nodes readmit node-7
expect_in "$out" "re-admitted (probation until"
expect_exit 0 "$baton" nodes --json
[ "$(jq -r '.[0].status' <<<"$out")" = probation ] || fail "after readmit: $out"
[ "$(jq -r '.[0].actions[0].action' <<<"$out")" = readmit ] || fail "readmit not audited: $out"
[ "$(jq -r '.[0].actions[0].user' <<<"$out")" = "$(id -un)" ] || fail "audit user: $out"

# A node policy whose pattern does not compile: 78 naming the file and the pattern.
printf 'patterns: [{kind: site_disk, regex: "disk (\\\\d+ failed"}]\n' >"$BATON_HOME/nodes.yaml"
expect_exit 78 "$baton" nodes
expect_in "$err" "node fault pattern 'site_disk'"
expect_in "$err" "$BATON_HOME/nodes.yaml"
printf 'ttl: forever\n' >"$BATON_HOME/nodes.yaml"
expect_exit 78 "$baton" nodes
expect_in "$err" "ttl"
rm "$BATON_HOME/nodes.yaml"

# The preflight on this machine: the run folder is writable and has room; the GPU check is run,
# or skipped and said so where there is no nvidia-smi.
mkdir -p "$tmp/run"
expect_exit 66 "$baton" preflight "$tmp/no-such-run"
expect_exit 0 "$baton" preflight "$tmp/run"
expect_in "$out" "writable: ok"
expect_in "$out" "space: ok"
if command -v nvidia-smi >/dev/null; then expect_in "$out" "gpu: "; else expect_in "$out" "gpu: skipped"; fi
# The fault-injection hook names this node: 76, and the node's incident file for the job.
node=${SLURMD_NODENAME:-$(hostname)}
expect_exit 76 env BATON_PREFLIGHT_FAIL_NODES="other,$node" "$baton" preflight "$tmp/run" --job 42 --restart 1
expect_in "$err" "node $node is unhealthy"
file="$tmp/run/nodes/incident-42.1.0.$node.preflight.json"
[ -f "$file" ] || fail "no incident file: $(ls -R "$tmp/run")"
[ "$(jq -r .kind "$file")" = preflight ] && [ "$(jq -r .host "$file")" = "$node" ] || fail "$(cat "$file")"
checks=$((checks + 1))
expect_exit 0 env BATON_PREFLIGHT_FAIL_NODES="other" "$baton" preflight "$tmp/run"

echo "PASS: $checks checks"
