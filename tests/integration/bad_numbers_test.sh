#!/usr/bin/env bash
# Bad numbers through the real SLURM path, with the real trainer:
#   nan-data   one episode of the dataset holds a NaN -> the trainer exits 65 naming the file and
#              tensor; the run FAILED (data_error) after one attempt, never requeued; `baton show`,
#              `baton attempts` and the API say why, with the file
#   diverged   lr 1e30 -> the non-finite steps are skipped and recorded with their episodes, the
#              trainer exits 79 after train.max_nonfinite_steps of them; FAILED (diverged), never
#              requeued; every checkpoint the run left is valid and finite
# usage: bad_numbers_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"

require_idle_cluster
make_dataset "$TMP/ds"
cp -r "$TMP/ds" "$TMP/ds-nan"
bad_file=$(sed -n 4p "$TMP/ds-nan/meta/episodes.jsonl" | jq -r .file)
python3 "$(dirname "$0")/../data/set_tensor_value.py" "$TMP/ds-nan/$bad_file" latents 5 nan
slurm="slurm: {partition: debug, cpus_per_task: 1, time: \"5:00\"}"

write_config "$TMP/nan.yaml" it-nan-data 20 "$slurm"
sed -i "s|path: $TMP/ds,|path: $TMP/ds-nan,|" "$TMP/nan.yaml"
submit "$TMP/nan.yaml"
nan_run=$run nan_job=$job
write_config "$TMP/div.yaml" it-diverged 40 "$slurm" "checkpoint: {every: 1, keep_last: 2}"
sed -i 's/lr: 2.0e-3/lr: 1.0e+30/' "$TMP/div.yaml"
submit "$TMP/div.yaml"
div_run=$run div_job=$job div_dir=$run_dir
ok "submitted run $nan_run (a NaN in $bad_file) as job $nan_job and run $div_run (lr 1e30) as job $div_job"

ended() {
  release_held "$nan_job" "$div_job"
  run_is "$nan_run" FAILED COMPLETED CANCELLED && run_is "$div_run" FAILED COMPLETED CANCELLED
}
wait_for 240 "both runs to end" ended
sleep 3 # nothing may come back
release_held "$nan_job" "$div_job"

# check RUN JOB REASON EXIT: FAILED after one attempt ending REASON with EXIT, job never requeued.
check() {
  local r=$1 j=$2 reason=$3 code=$4 attempts
  [[ $(run_status "$r") == FAILED ]] || fail "run $r is $(run_status "$r"), want FAILED"
  attempts=$("$baton" attempts "$r" --json)
  [[ $(jq length <<<"$attempts") == 1 && $(jq -r '.[0].end_reason' <<<"$attempts") == "$reason" &&
    $(jq -r '.[0].exit_code' <<<"$attempts") == "$code" && $(jq -r '.[0].action' <<<"$attempts") == fail ]] ||
    fail "run $r: attempts $(jq -c '[.[] | {end_reason, exit_code, action}]' <<<"$attempts"), want one $reason/$code/fail"
  [[ $(jq -r '.[0].trainer_exit_code' <<<"$attempts") == "$code" ]] || fail "run $r: no trainer exit code $code"
  [[ $(job_field "$j" Restarts) == 0 && $(job_field "$j" JobState) == FAILED ]] ||
    fail "job $j: $(job_field "$j" JobState) Restarts=$(job_field "$j" Restarts), want FAILED with 0"
  ok "run $r FAILED ($reason, exit $code) after one attempt; job $j never requeued"
}
check "$nan_run" "$nan_job" data_error 65
check "$div_run" "$div_job" diverged 79

# Why the NaN run stopped, in the CLI and the API: the file and the tensor.
show=$("$baton" show "$nan_run")
grep -qF "$bad_file" <<<"$show" && grep -qF "tensor latents holds 1 NaN/Inf value(s)" <<<"$show" ||
  fail "baton show does not say why run $nan_run stopped: $show"
grep -qF "data_error — exit 65" <<<"$("$baton" attempts "$nan_run")" || fail "baton attempts lacks the ending"
ok "baton show / attempts name $bad_file and the tensor"
port=$(free_port)
"$baton" serve --port "$port" >"$TMP/serve.log" 2>&1 &
serve_pid=$!
REF_PIDS+=("$serve_pid") # killed by the exit trap
wait_for 20 "baton serve to answer" curl -sf "http://127.0.0.1:$port/api/health" -o /dev/null
api=$(curl -sf "http://127.0.0.1:$port/api/runs/$nan_run/attempts")
jq -e --arg f "$bad_file" '.attempts[0].trainer_end_reason == "error" and .attempts[0].trainer_exit_code == 65
  and (.attempts[0].trainer_message | contains($f))' <<<"$api" >/dev/null ||
  fail "the API's attempts of run $nan_run do not say why: $api"
ok "the API (what the run page shows) names $bad_file"

# The diverged run: skipped steps with their episodes, the message, finite checkpoints.
json=$("$baton" show "$div_run" --json)
jq -e '.nonfinite_steps >= 3 and (.nonfinite[0].episodes | length) == 8' <<<"$json" >/dev/null ||
  fail "baton show --json of run $div_run lacks the skipped steps: $(jq -c '{nonfinite_steps, nonfinite: .nonfinite[0:1]}' <<<"$json")"
"$baton" show "$div_run" | grep -qF "consecutive steps with a NaN/Inf loss or gradient norm" ||
  fail "baton show does not say the run diverged"
ok "run $div_run: $(jq .nonfinite_steps <<<"$json") skipped steps with their episodes, diverged message shown"
n=0
for c in "$div_dir"/checkpoints/checkpoint_step_*; do
  [[ -e $c ]] || continue
  "$bt" ckpt verify "$c" >/dev/null || fail "$c is not valid"
  [[ $(jq -r .finite "$c/MANIFEST.json") == true ]] || fail "$c is not marked finite"
  n=$((n + 1))
done
((n >= 1)) || fail "the diverged run kept no checkpoint"
ok "the diverged run kept $n valid, finite checkpoint(s)"
done_line
