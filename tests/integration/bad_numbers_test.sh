#!/usr/bin/env bash
# Bad numbers through the real SLURM path, with the real trainer:
#   nan-data   one episode of the dataset holds a NaN -> the trainer exits 65 naming the file and
#              tensor; the run FAILED (data_error) after one attempt, never requeued; `baton show`,
#              `baton attempts` and the API say why, with the file
#   diverged   lr 1e30 -> the non-finite steps are skipped and recorded with their episodes, the
#              trainer exits 79 after train.max_nonfinite_steps of them; FAILED (diverged), never
#              requeued; every checkpoint the run left is valid and finite
#   bad-ckpt   the run folder holds checkpoint_step_4 whose manifest leaves out the (corrupted)
#              weights file, and a good checkpoint_step_2 -> the launcher skips step 4 saying why
#              (attempt_start.skipped_checkpoints), the run resumes exact from step 2 and completes
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

# A run folder prepared with two checkpoints of this very run (trained here, outside SLURM):
# step 2 intact, step 4 with the weights file corrupted and left out of its manifest.
ck_dir=$TMP/bad-ckpt-run
write_config "$TMP/ck.yaml" it-bad-ckpt 8 "$slurm" "checkpoint: {every: 2, keep_last: 5}"
echo "run: {name: it-bad-ckpt, dir: $ck_dir, steps: 8, seed: 11}" >>"$TMP/ck.yaml"
sed -i '1d' "$TMP/ck.yaml" # the run line above replaces the first one (run.dir added)
env -u SLURM_JOB_ID "$bt" train --config "$TMP/ck.yaml" --stop-after 4 >"$TMP/ck-local.log" 2>&1 || true
[[ -d $ck_dir/checkpoints/checkpoint_step_4 && -d $ck_dir/checkpoints/checkpoint_step_2 ]] ||
  fail "could not prepare the checkpoints: $(tail -3 "$TMP/ck-local.log")"
rm -rf "$ck_dir/events"
c4=$ck_dir/checkpoints/checkpoint_step_4
printf 'X' | dd of="$c4/transformer/diffusion_pytorch_model.safetensors" bs=1 seek=300 conv=notrunc status=none
jq '.files |= map(select(.path | contains("diffusion") | not))' "$c4/MANIFEST.json" >"$TMP/m.json" &&
  mv "$TMP/m.json" "$c4/MANIFEST.json"
submit "$TMP/ck.yaml"
ck_run=$run ck_job=$job
[[ $run_dir == "$ck_dir" ]] || fail "run folder $run_dir, want $ck_dir"

ended() {
  release_held "$nan_job" "$div_job" "$ck_job"
  run_is "$nan_run" FAILED COMPLETED CANCELLED && run_is "$div_run" FAILED COMPLETED CANCELLED &&
    run_is "$ck_run" FAILED COMPLETED CANCELLED
}
wait_for 240 "the three runs to end" ended
sleep 3 # nothing may come back
release_held "$nan_job" "$div_job" "$ck_job"

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
track_pid "$serve_pid"
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
# The checkpoint whose manifest does not cover its weights was skipped, with the reason, and the
# run went on from the previous valid one.
[[ $(run_status "$ck_run") == COMPLETED ]] || fail "run $ck_run is $(run_status "$ck_run"), want COMPLETED"
attempts=$("$baton" attempts "$ck_run" --json)
[[ $(jq length <<<"$attempts") == 1 && $(jq -r '.[0].resume_mode' <<<"$attempts") == exact &&
  $(jq -r '.[0].step0' <<<"$attempts") == 2 ]] ||
  fail "run $ck_run: $(jq -c '[.[] | {resume_mode, step0, checkpoint}]' <<<"$attempts"), want one exact attempt from 2"
grep -h '"type":"attempt_start"' "$ck_dir"/events/*.jsonl | jq -e '.skipped_checkpoints | length == 1 and
  (.[0] | contains("checkpoint_step_4") and contains("needs transformer/diffusion_pytorch_model.safetensors, which the manifest does not list"))' \
  >/dev/null || fail "attempt_start does not say why checkpoint_step_4 was skipped: $(grep -h attempt_start "$ck_dir"/events/*.jsonl)"
grep -q "skipping invalid checkpoint .*checkpoint_step_4" "$ck_dir/logs/$ck_job.out" || fail "the job log does not say why step 4 was skipped"
ok "run $ck_run skipped checkpoint_step_4 (manifest without its weights), resumed exact from 2, COMPLETED"
done_line
