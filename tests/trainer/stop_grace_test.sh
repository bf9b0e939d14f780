#!/usr/bin/env bash
# A stop signal that abandons the very step a background save holds (docs/trainer.md, "Stopping
# and resuming"): the background save is the stop's checkpoint, so it is finished, weighed
# without a stop save's cost, and never rewritten; the figures printed are the ones decided on.
# At realistic rates: a checkpoint of ~60 MB written at tens of MB/s (the test write delay) with
# a grace budget shorter than the whole save twice over. Then BATON_GRACE_S takes only decimal
# seconds in range, and `forward` refuses an empty sample (F = 0) naming it.
# usage: stop_grace_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 8 5:8

# cfg FILE RUN_DIR: a model of ~5M parameters (~60 MB per checkpoint with its AdamW moments),
# async periodic saves every 2 steps, 2 micro-steps per step.
cfg() {
  cat >"$1" <<YAML
run: {name: t, dir: $2, steps: 6, seed: 11}
data: {path: $tmp/ds, batch_size: 2, pad_multiple: 4, pool_factor: 2}
model: {dim: 512, heads: 4, layers: 2, ffn_dim: 1024, freq_dim: 16}
optim: {lr: 1.0e-3, warmup_steps: 2, grad_accum: 2}
checkpoint: {every: 2, keep_last: 10, async: true}
train: {dtype: float32, log_every: 100}
YAML
}

# 1. The signal lands in step 3 (0-based 2), whose starting state the background save of step 2
# holds. The write is slowed to ~40 MB/s (100 ms per 4 MiB) and every block of the step sleeps,
# so the signal lands while the write is under way. The grace (2 s) is less than what finishing
# it plus a rewrite of the same state would take, and at least what is left of it.
cfg "$tmp/a.yaml" "$tmp/a"
rc=0
BATON_GRACE_S=2 BATON_TEST_CKPT_WRITE_DELAY_MS=100 BATON_TEST_BLOCK_SLEEP_MS=150 \
  BATON_TEST_SIGNAL_AT=micro:2:1 "$bt" train --config "$tmp/a.yaml" >"$tmp/a.log" 2>&1 || rc=$?
[ $rc -eq 75 ] || fail "the stop exited $rc, expected 75: $(tail -5 "$tmp/a.log")"
grep -q "^finishing the background save of step 2, which holds the state the stop keeps (no stop save follows): " "$tmp/a.log" ||
  fail "the background save was not finished as the stop's checkpoint: $(grep -E 'background|abandon|checkpoint' "$tmp/a.log")"
! grep -q "abandoned the background save" "$tmp/a.log" || fail "the background save was abandoned"
! grep -q "for the stop save" "$tmp/a.log" || fail "a stop save's cost was weighed though none follows"
grep -q "checkpoint_step_2: .*(periodic), async: training stalled" "$tmp/a.log" ||
  fail "step 2 was not committed from the background: $(grep checkpoint "$tmp/a.log")"
! grep -q "(signal)" "$tmp/a.log" || fail "the same state was written again by a stop save: $(grep checkpoint "$tmp/a.log")"
grep -q "stopping at the start of step 3 on a stop request (USR1): nothing new to save, exit 75" "$tmp/a.log" ||
  fail "the stop did not end on the finished save: $(tail -3 "$tmp/a.log")"
[ "$(ls "$tmp/a/checkpoints")" = checkpoint_step_2 ] || fail "checkpoints: $(ls "$tmp/a/checkpoints")"
expect_exit 0 "$bt" ckpt verify "$tmp/a/checkpoints/checkpoint_step_2"
# The figures: what is left of it, in hundredths of a second, at a rate of MB/s, against the
# grace; "fit" exactly when the printed figure is within the budget.
python3 - "$tmp/a.log" <<'PY' || fail "the printed figures are not the decision: $(grep finishing "$tmp/a.log")"
import re, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("finishing the background save"))
m = re.search(r"~(\d+\.\d\d) s left of it, and no stop save after it, at ([\d.]+) MB/s (fit|exceed) "
              r"the (\d+(?:\.\d+)?) s grace budget", line)
if m is None:
    assert "nothing of it written yet" in line, line
    sys.exit(0)
left, rate, verdict, grace = float(m[1]), float(m[2]), m[3], float(m[4])
assert (verdict == "fit") == (left <= grace), line
assert 1 <= rate <= 1000, f"{rate} MB/s is no realistic rate: {line}"
assert verdict == "fit" or "would write the same state again" in line, line
print(f"ok: {left} s left at {rate} MB/s, {verdict} the {grace} s budget")
PY
checks=$((checks + 1))
echo "ok: a stop in the step a background save holds finishes that save (no rewrite, no stop-save cost)"
# The resume starts from it, exact.
rc=0; "$bt" train --config "$tmp/a.yaml" >"$tmp/a2.log" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "the resume exited $rc: $(tail -3 "$tmp/a2.log")"
grep -q '"step0":2' "$(events_file "$tmp/a" local 0)" || fail "the resume did not start from step 2"
checks=$((checks + 1)); echo "ok: resumed from the finished background save"

# 2. BATON_GRACE_S: decimal seconds in [0, 86400], else 78 naming it.
for bad in 0x10 1e308 nan inf -1 soon 86401; do
  expect_exit 78 env BATON_GRACE_S=$bad "$bt" train --config "$tmp/a.yaml"
  expect_in "$err" "BATON_GRACE_S='$bad' is not decimal seconds in [0, 86400]"
done

# 3. forward with an empty sample (F = 0): 65 naming the input, before libtorch sees it.
python3 - "$tmp/a/checkpoints/checkpoint_step_2/transformer/config.json" "$tmp/empty.safetensors" <<'PY'
import json, struct, sys
c = json.load(open(sys.argv[1]))["in_channels"]
head = json.dumps({"noisy_latents": {"dtype": "F32", "shape": [c, 0, 4, 4], "data_offsets": [0, 0]}})
head += " " * (-len(head) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(head)) + head.encode())
PY
expect_exit 65 "$bt" forward --init-from "$tmp/a/checkpoints/checkpoint_step_2" \
  --inputs "$tmp/empty.safetensors" --out "$tmp/o.safetensors"
expect_in "$err" "$tmp/empty.safetensors: noisy_latents has shape ["
expect_in "$err" "an empty sample (F 0, H 4, W 4)"
[ ! -e "$tmp/o.safetensors" ] || fail "forward wrote an output for an empty sample"
echo "$checks passed, 0 failed"
