#!/usr/bin/env bash
# A sweep on the two-node dev cluster, with the real trainer (docs/sweeps.md, "What the
# integration test shows"):
#   - a 16-member sweep (4 learning rates x 4 seeds) is ONE sbatch call, counted by wrappers on
#     PATH that log every SLURM command run (and who ran it: the test, a baton command, or a job);
#   - one sync pass with the 16 tasks live runs at most 2 SLURM commands;
#   - 4 members drawn at random (BATON_IT_SEED) are preempted twice each: SLURM's preemption
#     signal to the task's batch shell (scancel --batch --signal=USR1), the launcher requeues its
#     own array task <array>_<task>, the test cuts the requeue hold; all of it while `baton watch`
#     is stopped (SIGTERM once it has run a few passes);
#   - once watch runs again, 16/16 end COMPLETED in the store through watch alone, with no
#     duplicate run or attempt: 3 attempts (fresh, exact, exact) for each preempted member, 1 for
#     the others, every attempt file the launcher wrote ingested once, every step row once;
#   - 2 of the preempted members' final weights and AdamW state are bit-identical to the same
#     configs trained uninterrupted outside SLURM.
# Steps are slowed by the trainer's BATON_TEST_BLOCK_SLEEP_MS (sleeps inside each block, which
# change no number) so that a member cannot finish between the test seeing it train and its
# signal landing, however loaded the machine; every wait is on a state with a deadline.
# usage: sweep_array_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the two-node cluster is not up or stays busy.
source "$(dirname "$0")/lib.sh"
STEPS=${BATON_IT_STEPS:-300}
SLEEP_MS=${BATON_IT_BLOCK_SLEEP_MS:-12}
SEED=${BATON_IT_SEED:-$((RANDOM))}
eval "$(bash "$(dirname "$0")/../../slurm/dev_cluster.sh" env --nodes 2)"
require_idle_cluster
[[ $(sinfo -h -p debug -o '%D') == 2 ]] || { echo "FAIL  the debug partition of $SLURM_CONF has no 2 nodes" >&2; exit 2; }
make_dataset "$TMP/ds"

# Wrappers that log each SLURM command run, then run the real one. A line is "WHO COMMAND ARGS":
# WHO is "job" inside a job (the launcher), else $BATON_IT_WHO ("test" unless a step says).
mkdir -p "$TMP/bin"
for c in sbatch scontrol squeue scancel sacct sinfo; do
  real=$(command -v "$c") || { [[ $c == sacct ]] && continue; fail "$c is not installed"; }
  printf '#!/bin/bash\nwho=${BATON_IT_WHO:-test}; [[ -n ${SLURM_JOB_ID:-} ]] && who=job\necho "$who %s $*" >>"%s"\nexec %s "$@"\n' \
    "$c" "$TMP/slurm_calls" "$real" >"$TMP/bin/$c"
  chmod +x "$TMP/bin/$c"
done
export PATH=$TMP/bin:$PATH
: >"$TMP/slurm_calls"
calls_by() { grep -c "^$1 " "$TMP/slurm_calls" || true; }

write_config "$TMP/base.yaml" it-sweep "$STEPS" "checkpoint: {every: 100, keep_last: 10}" \
  "slurm: {partition: debug, cpus_per_task: 1, time: \"15:00\", signal: USR1, signal_lead_s: 60}"
cat >"$TMP/spec.yaml" <<YAML
base: base.yaml
name: it-lr-seed
max_parallel: 4
grid:
  optim.lr: [1.0e-3, 2.0e-3, 3.0e-3, 4.0e-3]
  run.seed: [1, 2, 3, 4]
YAML

# ---------------------------------------------------------------- one array, one sbatch
out=$(BATON_IT_WHO=sweep BATON_TEST_BLOCK_SLEEP_MS=$SLEEP_MS "$baton" sweep "$TMP/spec.yaml" --json) ||
  fail "baton sweep failed"
array=$(jq -r .job_id <<<"$out")
[[ $array =~ ^[0-9]+$ ]] || fail "sweep printed: $out"
track_job "$array"
mapfile -t RUNS < <(jq -r '.runs[]' <<<"$out")
((${#RUNS[@]} == 16)) || fail "sweep printed ${#RUNS[@]} runs: $out"
[[ $(grep -c ' sbatch ' "$TMP/slurm_calls") == 1 ]] || fail "sbatch runs: $(grep ' sbatch ' "$TMP/slurm_calls")"
grep -q -- "^sweep sbatch --parsable --array=0-15%4 " "$TMP/slurm_calls" ||
  fail "not one sbatch --array=0-15%4: $(grep ' sbatch ' "$TMP/slurm_calls")"
ok "16 members submitted as array $array with 1 sbatch call (--array=0-15%4)"
DIRS=()
for i in $(seq 0 15); do
  DIRS[i]=$("$baton" show "${RUNS[i]}" --json --no-sync | jq -r .run_dir)
  [[ -d ${DIRS[i]} ]] || fail "member $i has no run folder"
done

# ---------------------------------------------------------------- one sync pass, 16 live tasks
running() { [[ $(squeue -h -j "$array" -t RUNNING -o '%i' | wc -l) == 4 ]]; }
wait_for 240 "4 tasks of array $array to run" running
before=$(wc -l <"$TMP/slurm_calls")
BATON_IT_WHO=pass "$baton" watch --once >"$TMP/pass.log" 2>&1 || fail "baton watch --once: $(cat "$TMP/pass.log")"
pass_calls=$(tail -n +"$((before + 1))" "$TMP/slurm_calls" | grep -c '^pass ' || true)
live=$("$baton" ls --json --no-sync | jq '[.[] | select(.status == "PENDING" or .status == "RUNNING")] | length')
((live == 16)) || fail "$live live members after the pass, want 16"
((pass_calls <= 2)) || fail "one sync pass ran $pass_calls SLURM commands: $(grep '^pass ' "$TMP/slurm_calls")"
ok "one sync pass over 16 live tasks ran $pass_calls SLURM command(s): $(grep '^pass ' "$TMP/slurm_calls" | cut -d' ' -f2- | paste -sd';')"

# ---------------------------------------------------------------- watch runs, then is stopped
BATON_IT_WHO=watch "$baton" watch --interval 1 >"$TMP/watch1.log" 2>&1 &
watch_pid=$!
watched() { (($(calls_by watch) >= 3)); }
wait_for 120 "watch to run its passes" watched
kill -TERM "$watch_pid"
wait "$watch_pid" 2>/dev/null || true
ok "watch ran $(calls_by watch) SLURM command(s), then was stopped (SIGTERM)"
watch_lines=$(calls_by watch)

# ---------------------------------------------------------------- 4 random members, preempted twice
RANDOM=$SEED
CHOSEN=()
while ((${#CHOSEN[@]} < 4)); do
  i=$((RANDOM % 16))
  [[ " ${CHOSEN[*]} " == *" $i "* ]] || CHOSEN+=("$i")
done
note "members ${CHOSEN[*]} are preempted (BATON_IT_SEED=$SEED)"
# Per member: the preemptions done, and when the signal for the next one was sent (0: not yet).
# scancel runs in the background: after the signal landed it keeps retrying while the task is
# in transition (requeued), and a retry that reached the next attempt would preempt it once more;
# so the test ends it as soon as the attempt's own end shows the signal landed (the launcher
# writes attempt_end before it requeues), before the hold is cut. A signal without effect after
# 30 s (scancel refuses a task that is still starting) is sent again.
declare -A done_n=() sent_at=() scancel_pid=()
for i in "${CHOSEN[@]}"; do done_n[$i]=0 sent_at[$i]=0 scancel_pid[$i]=0; done
stop_scancel() {
  ((scancel_pid[$1] > 0)) || return 0
  kill -KILL "${scancel_pid[$1]}" 2>/dev/null || true
  wait "${scancel_pid[$1]}" 2>/dev/null || true
  scancel_pid[$1]=0
}
# step_preemption I: moves member I's preemptions on by what its task shows now.
step_preemption() {
  local i=$1 t=${array}_$1 r=${done_n[$1]} f
  f=$(events_file "${DIRS[i]}" "$t" "$r")
  if attempt_finished "${DIRS[i]}" "$t" "$r"; then
    stop_scancel "$i"
    grep '"type":"attempt_end"' "$f" | grep -q '"reason":"preempted"' ||
      fail "member $i: attempt $r ended before its preemption landed: $(tail -n 2 "$f")"
    ((sent_at[$i] > 0)) || fail "member $i: attempt $r ended preempted without a signal"
    if requeued "$t" $((r + 1)); then
      release_now "$t"
      done_n[$i]=$((r + 1)) sent_at[$i]=0
      note "member $i requeued itself as $t (Restarts=$((r + 1))), hold cut"
    fi
    return 0
  fi
  ((sent_at[$i] > 0 && SECONDS - sent_at[$i] < 30)) && return 0
  # Once it trained 3 steps its trainer is surely up.
  if attempt_advanced "${DIRS[i]}" "$t" "$r" 3; then
    stop_scancel "$i"
    scancel --batch --signal=USR1 "$t" >/dev/null 2>&1 &
    scancel_pid[$i]=$! sent_at[$i]=$SECONDS
    note "member $i ($t) signalled in attempt $r at step $(last_step_in "$f")"
  fi
}
all_preempted() {
  local i left=0
  for i in "${CHOSEN[@]}"; do
    ((done_n[$i] == 2)) && continue
    step_preemption "$i"
    ((done_n[$i] == 2)) || left=1
  done
  ((left == 0))
}
wait_for 900 "members ${CHOSEN[*]} to be preempted twice" all_preempted
[[ $(calls_by watch) == "$watch_lines" ]] || fail "watch ran SLURM commands while stopped"
ok "members ${CHOSEN[*]} preempted twice each (8 preemptions), each task requeued itself; watch not running"

# The uninterrupted twins of two preempted members, outside SLURM, from their frozen configs.
TWINS=("${CHOSEN[0]}" "${CHOSEN[1]}")
for i in "${TWINS[@]}"; do
  cp "${DIRS[i]}/run.yaml" "$TMP/twin$i.yaml"
  start_reference "$TMP/twin$i.yaml" "$TMP/twin$i" 1 1
done

# ---------------------------------------------------------------- watch again: the store catches up
BATON_IT_WHO=watch "$baton" watch --interval 2 >"$TMP/watch2.log" 2>&1 &
watch_pid=$!
completed() {
  [[ $("$baton" ls --json --no-sync | jq '[.[] | select(.status == "COMPLETED")] | length') == 16 ]]
}
ended_early() {
  "$baton" ls --json --no-sync | jq -e '[.[] | select(.status == "FAILED" or .status == "CANCELLED")] | length > 0' >/dev/null &&
    fail "a member ended early: $("$baton" ls --json --no-sync | jq -c '[.[] | {id, status}]')"
  completed
}
wait_for 900 "16/16 members COMPLETED in the store (by watch)" ended_early
kill -TERM "$watch_pid"
wait "$watch_pid" 2>/dev/null || true
ok "16/16 members COMPLETED, caught up by watch"

# ---------------------------------------------------------------- no duplicates, nothing lost
show=$("$baton" sweep show it-lr-seed --json)
[[ $(jq -r '[.members[].run_id | tostring] | join(",")' <<<"$show") == "$(IFS=,; echo "${RUNS[*]}")" ]] ||
  fail "the sweep's members are not the 16 runs submitted: $show"
[[ $("$baton" ls --json --no-sync | jq length) == 16 ]] || fail "runs other than the 16 members"
[[ $(jq -r '[.members[].run_id] | unique | length' <<<"$show") == 16 ]] || fail "duplicate runs"
for i in $(seq 0 15); do
  attempts=$("$baton" attempts "${RUNS[i]}" --json)
  want=1
  [[ " ${CHOSEN[*]} " == *" $i "* ]] && want=3
  files=$(find "${DIRS[i]}/events" -name "${array}_$i.*.jsonl" | wc -l)
  [[ $(jq length <<<"$attempts") == "$want" && $files == "$want" ]] ||
    fail "member $i: $(jq length <<<"$attempts") attempts in the store, $files files; want $want"
  [[ $(jq '[.[] | "\(.job_id).\(.restart_count)"] | unique | length' <<<"$attempts") == "$want" ]] ||
    fail "member $i has duplicate attempts: $attempts"
  [[ $(jq -r '[.[].job_id] | unique | .[]' <<<"$attempts") == "${array}_$i" ]] ||
    fail "member $i ran as other jobs than ${array}_$i: $attempts"
  modes=$(jq -r '[.[] | .resume_mode] | join(",")' <<<"$attempts")
  ends=$(jq -r '[.[] | .end_reason] | join(",")' <<<"$attempts")
  if ((want == 3)); then
    [[ $modes == fresh,exact,exact && $ends == preempted,preempted,completed ]] ||
      fail "member $i: attempts $modes / $ends"
  else
    [[ $modes == fresh && $ends == completed ]] || fail "member $i: attempt $modes / $ends"
  fi
  json=$("$baton" show "${RUNS[i]}" --json --no-sync)
  [[ $(jq .steps <<<"$json") == "$STEPS" && $(jq .superseded_steps <<<"$json") == 0 ]] ||
    fail "member $i: $(jq .steps <<<"$json") step rows ($(jq .superseded_steps <<<"$json") superseded), want $STEPS"
done
ok "0 duplicate runs or attempts: preempted members fresh,exact,exact; others fresh; $STEPS step rows each"
[[ $(grep -c ' sbatch ' "$TMP/slurm_calls") == 1 ]] || fail "more sbatch runs: $(grep ' sbatch ' "$TMP/slurm_calls")"
ok "still 1 sbatch call in the whole test; launchers ran $(calls_by job) SLURM command(s) in the jobs"

finish_reference
for i in "${TWINS[@]}"; do
  same_final_state "$TMP/twin$i/checkpoints/checkpoint_step_$STEPS" "${DIRS[i]}/checkpoints/checkpoint_step_$STEPS"
done
ok "members ${TWINS[*]} (preempted twice) are bit-identical to their uninterrupted twins"
done_line
