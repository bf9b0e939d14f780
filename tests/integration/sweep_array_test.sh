#!/usr/bin/env bash
# Issue 35's goals on the two-node dev cluster, with the real trainer: a 16-member sweep (4
# learning rates x 4 seeds) is ONE sbatch call (counted by wrappers on PATH); 4 members are
# preempted twice each (SLURM's preemption signal to the task's batch shell, the launcher
# requeues its own array task `<array>_<task>`) while `baton watch` is stopped; all 16 end
# COMPLETED with no duplicate run or attempt; 2 preempted members are bit-identical to the same
# configs trained uninterrupted; once watch runs again the store has every attempt; and one sync
# pass with 16 live tasks runs at most 2 SLURM query commands. The members preempted are the
# first 4 (they start at once, so each is surely running when its signal comes).
# Not registered with ctest yet: on the dev cluster its first checks pass (1 sbatch call, 1
# SLURM query per sync pass with 16 live tasks, a member preempted and requeued as
# <array>_<task>), but the side-by-side preemption of the 4 members does not land on every one
# (a member COMPLETES before its signal takes effect).
# usage: sweep_array_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the two-node cluster is not up.
source "$(dirname "$0")/lib.sh"
STEPS=${BATON_IT_STEPS:-300}
eval "$(bash "$(dirname "$0")/../../slurm/dev_cluster.sh" env --nodes 2)"
require_idle_cluster
make_dataset "$TMP/ds"

# Wrappers that log each SLURM command run, then run the real one.
mkdir -p "$TMP/bin"
for c in sbatch scontrol squeue scancel; do
  real=$(command -v "$c") || fail "$c is not installed"
  printf '#!/bin/bash\necho "%s $*" >>"%s"\nexec %s "$@"\n' "$c" "$TMP/slurm_calls" "$real" >"$TMP/bin/$c"
  chmod +x "$TMP/bin/$c"
done
calls() { grep -c "$1" "$TMP/slurm_calls" 2>/dev/null || true; }
export PATH=$TMP/bin:$PATH

write_config "$TMP/base.yaml" it-sweep "$STEPS" "checkpoint: {every: 100, keep_last: 10}" \
  "slurm: {partition: debug, cpus_per_task: 1, time: \"10:00\", signal: USR1, signal_lead_s: 60}"
cat >"$TMP/spec.yaml" <<YAML
base: base.yaml
name: it-lr-seed
max_parallel: 4
grid:
  optim.lr: [1.0e-3, 2.0e-3, 3.0e-3, 4.0e-3]
  run.seed: [1, 2, 3, 4]
YAML
: >"$TMP/slurm_calls"
out=$("$baton" sweep "$TMP/spec.yaml" --json) || fail "baton sweep failed"
array=$(jq -r .job_id <<<"$out")
track_job "$array"
[[ $(jq '.runs | length' <<<"$out") == 16 ]] || fail "sweep printed: $out"
[[ $(calls '^sbatch') == 1 ]] || fail "$(calls '^sbatch') sbatch calls: $(cat "$TMP/slurm_calls")"
grep -q -- "--array=0-15%4" "$TMP/slurm_calls" || fail "no --array=0-15%4: $(cat "$TMP/slurm_calls")"
ok "16 members submitted as array $array with 1 sbatch call"

member() { jq -r ".members[] | select(.index == $1) | .$2" <<<"$("$baton" sweep show it-lr-seed --json)"; }
dir_of() { "$baton" show "$(member "$1" run_id)" --json --no-sync | jq -r .run_dir; }

# One sync pass with the 16 tasks live: at most 2 SLURM query commands.
: >"$TMP/slurm_calls"
"$baton" watch --once >/dev/null || fail "baton watch --once failed"
queries=$(grep -cE '^(scontrol (-o )?show job|squeue)' "$TMP/slurm_calls" || true)
((queries <= 2)) || fail "one sync pass ran $queries SLURM queries: $(cat "$TMP/slurm_calls")"
ok "one sync pass over 16 live tasks: $queries SLURM query command(s)"

# watch runs, then is stopped before the preemptions.
"$baton" watch --interval 1 >"$TMP/watch1.log" 2>&1 &
watch_pid=$!
sleep 3
kill "$watch_pid"; wait "$watch_pid" 2>/dev/null || true
ok "watch stopped"

# preempt_round R MEMBER...: each member's attempt R-1 gets SLURM's preemption signal (to the
# task's batch shell) once it advanced 3 steps; its launcher requeues `<array>_<task>`; once the
# task is PENDING with Restarts=R its hold is cut as the tests do (no watch to do it). The
# members are handled side by side: the others of the array keep running meanwhile.
preempt_round() {
  local r=$1 i t deadline=$((SECONDS + 420))
  shift
  local -A dirs=() signalled=()
  local left=("$@") next
  for i in "$@"; do dirs[$i]=$(dir_of "$i"); done
  while ((${#left[@]} > 0)); do
    ((SECONDS < deadline)) || fail "round $r: members ${left[*]} were not preempted in time"
    next=()
    for i in "${left[@]}"; do
      t=${array}_$i
      if [[ $(job_field "$t" JobState) == COMPLETED ]]; then
        fail "member $i COMPLETED before preemption $r landed: raise BATON_IT_STEPS"
      elif [[ -z ${signalled[$i]:-} ]]; then
        # scancel refuses ("Job can not be altered now") a task that is still starting: sent
        # again on the next poll unless the trainer's segment_end shows it landed.
        if grep -q '"type":"segment_end"' "${dirs[$i]}/events/$t.$((r - 1)).jsonl" 2>/dev/null; then
          signalled[$i]=1
        elif attempt_advanced "${dirs[$i]}" "$t" $((r - 1)) 3 &&
          scancel --batch --signal=USR1 "$t" 2>/dev/null; then
          signalled[$i]=1
        fi
        next+=("$i")
      elif requeued "$t" "$r"; then
        release_now "$t"
      else
        next+=("$i")
      fi
    done
    left=("${next[@]}")
    sleep 0.2
  done
}
preempt_round 1 0 1 2 3
ok "members 0 1 2 3 preempted once (each task requeued itself), watch not running"
preempt_round 2 0 1 2 3
ok "members 0 1 2 3 preempted twice, watch not running"

# The uninterrupted twins of members 0 and 5, outside SLURM, from their frozen configs.
for i in 0 1; do
  cp "$(dir_of "$i")/run.yaml" "$TMP/twin$i.yaml"
  start_reference "$TMP/twin$i.yaml" "$TMP/twin$i" 1 1
done

"$baton" watch --interval 2 >"$TMP/watch2.log" 2>&1 &
watch_pid=$!
done_all() {
  [[ $("$baton" sweep show it-lr-seed --json | jq '[.members[] | select(.status == "COMPLETED")] | length') == 16 ]]
}
wait_for 900 "16/16 members COMPLETED" done_all
kill "$watch_pid"; wait "$watch_pid" 2>/dev/null || true
ok "16/16 members COMPLETED"

show=$("$baton" sweep show it-lr-seed --json)
[[ $(jq '[.members[].run_id] | unique | length' <<<"$show") == 16 ]] || fail "duplicate runs: $show"
[[ $("$baton" ls --json | jq length) == 16 ]] || fail "runs other than the 16 members"
for i in $(seq 0 15); do
  attempts=$("$baton" attempts "$(member "$i" run_id)" --json)
  want=1; ((i < 4)) && want=3
  [[ $(jq length <<<"$attempts") == "$want" ]] || fail "member $i: $(jq length <<<"$attempts") attempts, expected $want"
  [[ $(jq '[.[] | "\(.job_id).\(.restart_count)"] | unique | length' <<<"$attempts") == "$want" ]] ||
    fail "member $i has duplicate attempts: $attempts"
  if ((want == 3)); then
    [[ $(jq -r '.[1].resume_mode, .[2].resume_mode' <<<"$attempts" | sort -u) == exact ]] ||
      fail "member $i did not resume exact: $attempts"
  fi
done
ok "0 duplicate runs or attempts; the 4 preempted members have 3 attempts each, resumed exact"

finish_reference
for i in 0 1; do
  same_final_state "$TMP/twin$i/checkpoints/checkpoint_step_$STEPS" "$(dir_of "$i")/checkpoints/checkpoint_step_$STEPS"
done
ok "members 0 and 1 are bit-identical to their uninterrupted twins"
done_line
