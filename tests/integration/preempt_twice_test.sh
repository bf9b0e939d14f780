#!/usr/bin/env bash
# Issue 5, "must show" 1, with the real trainer on the real dev cluster: a tiny run submitted with
# `baton submit` on `debug` is preempted TWICE by `urgent` jobs that need every CPU; each time the
# launcher forwards the signal, the trainer checkpoints and exits 75, the launcher requeues the
# same job id; each later attempt resumes `exact` from the signal checkpoint with no LR re-warmup;
# the run reaches its target and COMPLETES, and its final weights and AdamW state, and its
# per-step lr/loss/grad-norm series, are bit-identical to the same config trained uninterrupted.
# `baton show` lists 3 attempts with the right step ranges, and where the run's time went: buckets
# that add up to its wall time and a productive bucket equal to its counted steps' times.
# usage: preempt_twice_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../common/store_sql.sh"
STEPS=${BATON_IT_STEPS:-400}

require_idle_cluster
make_dataset "$TMP/ds"
write_config "$TMP/p2.yaml" it-preempt2 "$STEPS" \
  "checkpoint: {every: 100, keep_last: 10}" \
  "slurm: {partition: debug, cpus_per_task: $CPUS, time: \"10:00\", signal: USR1, signal_lead_s: 60}"
# A stop save that cannot fit the real partition's grace (a write rate of 1 kB/s): a warning
# naming the levers, and with --strict a refusal (78) that creates nothing.
write_config "$TMP/slow.yaml" it-slow-folder 10 "checkpoint: {every: 100, write_gbps: 0.000001}" \
  "slurm: {partition: debug, cpus_per_task: $CPUS, time: \"10:00\"}"
runs_before=$("$baton" ls --json | jq length)
rc=0; "$baton" submit "$TMP/slow.yaml" --strict > "$TMP/strict.out" 2>&1 || rc=$?
((rc == 78)) || fail "submit --strict of a stop save that cannot fit exited $rc: $(cat "$TMP/strict.out")"
grep -q "GraceTime 30 s + KillWait 5 s" "$TMP/strict.out" && grep -q "more ranks" "$TMP/strict.out" ||
  fail "the refusal does not name the grace and the levers: $(cat "$TMP/strict.out")"
[[ $("$baton" ls --json | jq length) == "$runs_before" ]] || fail "a refused submit created a run"
ok "submit --strict refuses a stop save over the partition's grace (78), nothing created"

submit "$TMP/p2.yaml"
grep -q -- '--signal=B:USR1@60' "$run_dir/sbatch.sh" || fail "sbatch.sh lacks --signal=B:USR1@60"
ok "submitted run $run as job $job (target $STEPS steps, $CPUS CPUs)"
start_reference "$TMP/p2.yaml" "$TMP/reference" 1 "$CPUS"

# ---------------------------------------------------------------- preemption 1
wait_for 120 "attempt 0 to log step 5" attempt_progressed "$run_dir" "$job" 0 5
preempt "$job" 1
ok "preempted once: job $job requeued (PENDING, Restarts=1), hold cut with StartTime=now"
attempt_finished "$run_dir" "$job" 0 || fail "attempt 0 has no attempt_end"

# ---------------------------------------------------------------- preemption 2
wait_for 120 "attempt 1 to log 5 steps" attempt_advanced "$run_dir" "$job" 1 5
attempt_finished "$run_dir" "$job" 1 && fail "attempt 1 ended before the second preemption (steps too fast?)"
preempt "$job" 2
ok "preempted twice: job $job requeued (PENDING, Restarts=2)"

# ---------------------------------------------------------------- completion
wait_for 300 "run $run to be COMPLETED" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
[[ $(job_field "$job" JobState) == COMPLETED && $(job_field "$job" Restarts) == 2 ]] ||
  fail "job $job: $(job_field "$job" JobState), Restarts=$(job_field "$job" Restarts); want COMPLETED, 2"
ok "run $run COMPLETED; SLURM job $job COMPLETED with Restarts=2 (same job id throughout)"

# ---------------------------------------------------------------- history
# The stop save: predicted at submit against the partition's real grace, measured at each stop.
show=$("$baton" show "$run" --json)
jq -e '.stop_save | .grace_s == 35 and (.grace_source | test("GraceTime 30 s [+] KillWait 5 s"))
  and .predicted_s > 0 and .fits and .bytes_per_rank > 0 and (.write_source | test("probe of"))' \
  <<<"$show" > /dev/null || fail "baton show --json stop_save: $(jq -c .stop_save <<<"$show")"
"$baton" show "$run" | grep -q "stop save predicted .* grace 35 s .* measured" ||
  fail "baton show has no stop save line: $("$baton" show "$run" | head -12)"
attempts=$("$baton" attempts "$run" --json)
a() { jq -r ".[$1].$2" <<<"$attempts"; }
n=$(jq length <<<"$attempts")
((n == 3)) || fail "expected 3 attempts, got $n: $attempts"
for i in 0 1 2; do
  [[ $(a $i job_id) == "$job" && $(a $i restart_count) == "$i" ]] ||
    fail "attempt $i: job $(a $i job_id) restart $(a $i restart_count), want $job.$i"
done
e0=$(a 0 last_step) e1=$(a 1 last_step)
[[ $(a 0 resume_mode) == fresh && $(a 0 step0) == 0 && $(a 0 end_reason) == preempted ]] ||
  fail "attempt 0: $(a 0 resume_mode) from $(a 0 step0), $(a 0 end_reason); want fresh from 0, preempted"
[[ $(a 1 resume_mode) == exact && $(a 1 step0) == "$e0" && $(a 1 end_reason) == preempted ]] ||
  fail "attempt 1: $(a 1 resume_mode) from $(a 1 step0), $(a 1 end_reason); want exact from $e0, preempted"
[[ $(a 2 resume_mode) == exact && $(a 2 step0) == "$e1" && $(a 2 end_reason) == completed ]] ||
  fail "attempt 2: $(a 2 resume_mode) from $(a 2 step0), $(a 2 end_reason); want exact from $e1, completed"
((0 < e0 && e0 < e1 && e1 < STEPS)) || fail "step ranges 0..$e0, $e0..$e1, $e1..$STEPS are not increasing"
[[ $(a 2 last_step) == "$STEPS" ]] || fail "last attempt ended at $(a 2 last_step), want $STEPS"
[[ $(a 0 exit_code) == 75 && $(a 1 exit_code) == 75 && $(a 2 exit_code) == 0 ]] ||
  fail "exit codes $(a 0 exit_code) $(a 1 exit_code) $(a 2 exit_code), want 75 75 0"
for i in 1 2; do
  [[ $(a $i checkpoint) == "$run_dir/checkpoints/checkpoint_step_$(a $i step0)" ]] ||
    fail "attempt $i resumed from $(a $i checkpoint)"
  [[ $(a $i resume_warmup_steps) == 0 ]] || fail "attempt $i has a resume warmup of $(a $i resume_warmup_steps)"
  w=$(a $i warmup_until)
  [[ $w == null ]] || ((w <= $(a $i step0))) || fail "attempt $i warms up until step $w"
done
ok "attempts: 0..$e0 fresh (preempted, 75) | $e0..$e1 exact (preempted, 75) | $e1..$STEPS exact (completed, 0)"
[[ $(jq -c '[.stop_save.measured[].step] | sort' <<<"$show") == "[$e0,$e1]" ]] ||
  fail "measured stop saves at $(jq -c '[.stop_save.measured[].step]' <<<"$show"), want $e0 and $e1"
ok "stop save predicted $(jq .stop_save.predicted_s <<<"$show") s against a grace of 35 s; measured at steps $e0 and $e1"

# Every stop wrote its checkpoint on the signal, every step after the first attempt ran at full LR.
for i in 0 1; do
  f=$(events_file "$run_dir" "$job" "$i")
  grep -q "\"reason\":\"signal\"" "$f" || fail "attempt $i did not stop on a signal"
  [[ $(jq -s "map(select(.type == \"checkpoint\" and .reason == \"signal\" and .step == $(a $i last_step))) | length" "$f") == 1 ]] ||
    fail "attempt $i has no signal checkpoint at step $(a $i last_step)"
done
warm=$(cat "$(events_file "$run_dir" "$job" 1)" "$(events_file "$run_dir" "$job" 2)" |
  jq -s '[.[] | select(.type == "step" and .in_warmup)] | length')
[[ $warm == 0 ]] || fail "$warm steps of attempts 1 and 2 ran in warmup"
ok "each preemption checkpointed on USR1 at the stop step; no warmup after the first attempt"

show=$("$baton" show "$run")
echo "$show"
table=$(sed -n '/^ATTEMPT/,$p' <<<"$show")
[[ $(grep -c "^[0-9]" <<<"$table") == 3 ]] || fail "baton show does not list 3 attempts"
grep -Eq "^2 +$job\.1 +- +$((e0 + 1))\.\.$e1 +exact +- +preempted" <<<"$table" || fail "attempt 2 (job.1) row wrong"
grep -Eq "^3 +$job\.2 +- +$((e1 + 1))\.\.$STEPS +exact +- +completed" <<<"$table" || fail "attempt 3 (job.2) row wrong"
json=$("$baton" show "$run" --json)
[[ $(jq .steps <<<"$json") == "$STEPS" && $(jq .superseded_steps <<<"$json") == 0 ]] ||
  fail "store holds $(jq .steps <<<"$json") effective step rows ($(jq .superseded_steps <<<"$json") superseded), want $STEPS (0)"
ok "baton show: 3 attempts, step ranges $((e0 + 1))..$e1 and $((e1 + 1))..$STEPS, exact, no warmup; $STEPS step rows"

# Where the time went: the buckets add up to the wall time since submit (the run's own record,
# its last attempt's end) within 1 %, per attempt too; productive is the sum of the counted
# steps' times in the store's rows; each preemption shows as a requeue hold and a stop.
counted=$(store_sql "$BATON_HOME/baton.db" "SELECT SUM(step_time_s) FROM steps WHERE run_id = $run AND superseded = 0 AND nonfinite = 0")
jq -e --argjson counted "$counted" '
  (.attempts[-1].ended_at - .created_at) as $wall | .time as $t
  | (($t.buckets | add) - $wall | fabs) <= 0.01 * $wall
    and ($t.wall_s - $wall | fabs) <= 0.01 * $wall
    and (($t.buckets.productive - $counted) | fabs) <= 1e-6 * $counted
    and ($t.attempts | length) == 3
    and all($t.attempts[]; ((.buckets | add) - .wall_s | fabs) <= 0.01 * .wall_s and .buckets.startup > 0
                            and .buckets.productive > 0)
    and all($t.attempts[0:2][]; .buckets.stop > 0 and .interrupted)
    and all($t.attempts[1:3][]; .buckets.requeue_hold > 0)
    and $t.buckets.checkpoint_stall > 0 and $t.ettr > 0 and $t.ettr < 1
    and $t.ettr_without_queue >= $t.ettr
    and $t.checkpoint_interval.interruptions == 2 and $t.checkpoint_interval.steps > 0' \
  >/dev/null <<<"$json" || fail "time buckets of run $run: $(jq -c .time <<<"$json") (counted steps: $counted s)"
ettr_text=$(printf 'ETTR %.1f %%' "$(jq '.time.ettr * 100' <<<"$json")")
grep -qF "$ettr_text" <<<"$show" || fail "baton show does not print $ettr_text"
ok "time: wall $(jq '.time.wall_s | round' <<<"$json") s = the buckets' sum within 1 %, productive $counted s = the counted steps, ETTR $(jq '.time.ettr * 1000 | round / 10' <<<"$json") % ($(jq '.time.ettr_without_queue * 1000 | round / 10' <<<"$json") % without queue)"

# ---------------------------------------------------------------- the uninterrupted run
finish_reference
same_final_state "$TMP/reference/checkpoints/checkpoint_step_$STEPS" "$run_dir/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state bit-identical to an uninterrupted run"
diff <(effective_steps "$TMP/reference") <(effective_steps "$run_dir") >"$TMP/steps.diff" ||
  fail "per-step lr/loss/grad norm differ from the uninterrupted run: $(head -n 5 "$TMP/steps.diff")"
[[ $(effective_steps "$run_dir" | wc -l) == "$STEPS" ]] || fail "expected $STEPS logged steps"
ok "per-step lr, loss and grad norm bit-identical to the uninterrupted run ($STEPS steps)"
done_line
