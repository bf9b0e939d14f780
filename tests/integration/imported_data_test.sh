#!/usr/bin/env bash
# Training on imported LeRobot data through the real SLURM path: a tiny upstream-style dataset
# (tests/lerobot/make_upstream_dataset.py: robotwin layout, 30 action channels, shared texts) is
# imported with `baton-train import-lerobot`, a tiny model trains on it via `baton submit` on
# `debug`, is preempted once by an `urgent` job, resumes `exact` and completes with final weights,
# AdamW state and per-step series bit-identical to the same config trained uninterrupted.
# usage: imported_data_test.sh BATON BATON_TRAIN
# Exit 0 pass; 1 a failed check; 2 the cluster is not up or not idle.
source "$(dirname "$0")/lib.sh"
STEPS=${BATON_IT_STEPS:-60}
here="$(dirname "$0")/../lerobot"

require_idle_cluster
(cd "$here" && /usr/bin/python3 make_upstream_dataset.py "$TMP/up" --segments 12 --text-len 8 --text-dim 16) \
  >/dev/null || fail "the generator failed"
"$bt" import-lerobot --src "$TMP/up/src" --out "$TMP/ds" --profile "$TMP/up/profile.yaml" --json \
  >"$TMP/import.json" || fail "import-lerobot failed: $(cat "$TMP/import.json")"
[[ $(jq .imported "$TMP/import.json") == 12 && $(jq .distinct_texts "$TMP/import.json") == 2 ]] ||
  fail "import report: $(cat "$TMP/import.json")"
ok "imported 12 segments (2 distinct texts) into a version-2 dataset"

# A tiny model on the imported sizes (latents 4 x 6 x 4, actions 30 x 16, text 8 x 16).
{
  echo "run: {name: it-imported, steps: $STEPS, seed: 11}"
  echo "data: {path: $TMP/ds, batch_size: 4, pad_multiple: 4, pool_factor: 2}"
  echo "model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}"
  echo "optim: {lr: 2.0e-3, warmup_steps: 3, grad_accum: 2}"
  echo "train: {dtype: float32, log_every: 10}"
  echo "checkpoint: {every: 100, keep_last: 10}"
  echo "slurm: {partition: debug, cpus_per_task: $CPUS, time: \"10:00\", signal: USR1, signal_lead_s: 60}"
} >"$TMP/imported.yaml"
submit "$TMP/imported.yaml"
ok "submitted run $run as job $job (target $STEPS steps)"
start_reference "$TMP/imported.yaml" "$TMP/reference" 1 "$CPUS"

wait_for 180 "attempt 0 to log step 5" attempt_progressed "$run_dir" "$job" 0 5
preempt "$job" 1
ok "preempted: job $job requeued (PENDING, Restarts=1)"

wait_for 300 "run $run to be COMPLETED" run_is "$run" COMPLETED FAILED CANCELLED
[[ $(run_status "$run") == COMPLETED ]] || fail "run $run ended $(run_status "$run")"
attempts=$("$baton" attempts "$run" --json)
[[ $(jq length <<<"$attempts") == 2 && $(jq -r '.[1].resume_mode' <<<"$attempts") == exact &&
   $(jq -r '.[0].end_reason' <<<"$attempts") == preempted ]] || fail "attempts: $attempts"
ok "run $run COMPLETED in 2 attempts; the second resumed exact"

finish_reference
same_final_state "$TMP/reference/checkpoints/checkpoint_step_$STEPS" "$run_dir/checkpoints/checkpoint_step_$STEPS"
ok "final weights and AdamW state bit-identical to an uninterrupted run on the imported data"
diff <(effective_steps "$TMP/reference") <(effective_steps "$run_dir") >"$TMP/steps.diff" ||
  fail "per-step lr/loss/grad norm differ from the uninterrupted run: $(head -n 5 "$TMP/steps.diff")"
ok "per-step lr, loss and grad norm identical to the uninterrupted run"
done_line
