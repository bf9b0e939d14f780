#!/usr/bin/env bash
# Training integrity under bad input, end to end with the real trainer:
#   - an episode holding a NaN is a data error (65) naming the file and tensor, data-check lists
#     every bad episode, and the trainer's events end with segment_end reason "error";
#   - a divergent LR: non-finite steps are not applied, recorded with their episodes, and after
#     train.max_nonfinite_steps in a row the run stops as diverged (79) with finite checkpoints;
#   - a manifest that does not cover its kind's files, or whose steps disagree, is invalid;
#   - an exact resume refuses another run's checkpoint (seed, data, pad multiple, dtype, plan),
#     --resume none refuses a folder with checkpoints unless --start-over;
#   - a target below the checkpoint's step is refused;
#   - SIGINT and a stop signal at any moment after start end in 75 with nothing lost.
# usage: integrity_test.sh BATON_TRAIN BATON
source "$(dirname "$0")/common.sh"
baton=$2
make_dataset "$tmp/ds" 16 5:12

events_of() { cat "$1"/events/*.jsonl; }

# poison FILE TENSOR VALUE: sets element 3 of TENSOR (F32) in a safetensors file to VALUE.
poison() { python3 "$(dirname "$0")/../data/set_tensor_value.py" "$1" "$2" 3 "$3"; }

# --- 1. A NaN (or Inf) in an episode's tensors: exit 65 naming file and tensor. ---------------
cp -r "$tmp/ds" "$tmp/ds_nan"
ep3=$(python3 -c "import json; print([json.loads(l)['file'] for l in open('$tmp/ds_nan/meta/episodes.jsonl')][3])")
ep5=$(python3 -c "import json; print([json.loads(l)['file'] for l in open('$tmp/ds_nan/meta/episodes.jsonl')][5])")
poison "$tmp/ds_nan/$ep3" latents nan
poison "$tmp/ds_nan/$ep5" actions inf
expect_exit 65 "$bt" data-check --data "$tmp/ds_nan" --batch-size 2
expect_in "$err" "$ep3"
expect_in "$err" "tensor latents holds 1 NaN/Inf value(s)"
expect_in "$err" "$ep5"
expect_in "$err" "tensor actions holds 1 NaN/Inf value(s)"
expect_in "$err" "2 bad episode(s)"
expect_exit 0 "$bt" data-check --data "$tmp/ds" --batch-size 2

STEPS=6 write_config "$tmp/nan.yaml" "$tmp/nan"
sed -i "s#path: $tmp/ds,#path: $tmp/ds_nan,#" "$tmp/nan.yaml"
mkdir -p "$tmp/nan"
expect_exit 65 "$bt" train --config "$tmp/nan.yaml"
expect_in "$err" "holds 1 NaN/Inf value(s)"
expect_in "$err" "ds_nan/episodes/ep_00000"
python3 - "$(events_file "$tmp/nan" local 0)" <<'PY' || fail "no segment_end error record for the NaN episode"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
end = [r for r in rows if r["type"] == "segment_end"]
assert len(end) == 1, end
e = end[0]
assert e["reason"] == "error" and e["exit_code"] == 65, e
assert "NaN/Inf" in e["message"] and ".safetensors" in e["message"], e
assert "\n  at " not in e["message"], e
PY
checks=$((checks + 1)); echo "ok: the NaN episode's data error is a segment_end record with the message"
[ -z "$(ls "$tmp/nan/checkpoints" 2>/dev/null)" ] || fail "a failed run must not write checkpoints"

# --- 2. A divergent LR: non-finite steps are skipped, then the run stops as diverged. --------
STEPS=12 EVERY=2 write_config "$tmp/div.yaml" "$tmp/div"
# Two good steps at a normal LR, then an LR that overflows the weights within a step or two.
rc=0; train_ranks 1 --config "$tmp/div.yaml" --stop-after 2 || rc=$?
[ $rc -eq 75 ] || fail "warm-up segment exited $rc"
sed -i 's/lr: 2.0e-3/lr: 1.0e+30/' "$tmp/div.yaml"
# The same run, another LR: only the weights are taken (an exact resume must not change the LR).
rc=0; train_ranks 1 --config "$tmp/div.yaml" --resume "$tmp/div/checkpoints/checkpoint_step_2" \
  --resume-mode weights_only --expect-mode weights_only || rc=$?
[ $rc -eq 79 ] || fail "a divergent run must exit 79 (diverged), got $rc: $(tail -5 "$tmp/train.log")"
python3 - "$(events_file "$tmp/div" local 0)" <<'PY' || fail "diverged events"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in rows if r["type"] == "step"]
bad = [r for r in steps if r.get("nonfinite")]
assert len(bad) >= 3, [(r["step"], r["loss"]) for r in steps]
last3 = bad[-3:]
assert [r["consecutive_nonfinite"] for r in last3] == [1, 2, 3], last3
for r in bad:
    assert r["nonfinite_episodes"] and all(isinstance(e, str) for e in r["nonfinite_episodes"]), r
    # 2 micro-batches of 4 episodes on one rank
    assert len(r["nonfinite_episodes"]) == 8, r
end = [r for r in rows if r["type"] == "segment_end"][-1]
assert end["reason"] == "diverged" and end["exit_code"] == 79, end
assert "consecutive steps" in end["message"] and "max_nonfinite_steps 3" in end["message"], end
PY
checks=$((checks + 1)); echo "ok: non-finite steps recorded with their episodes; diverged after 3 in a row"
# Every checkpoint left is valid and finite, and the weights of the last one are finite.
python3 - "$tmp/div/checkpoints" <<'PY' || fail "a non-finite checkpoint was written"
import glob, json, struct, sys, math
dirs = sorted(glob.glob(sys.argv[1] + "/checkpoint_step_*"))
assert dirs, "no checkpoints"
for d in dirs:
    m = json.load(open(d + "/MANIFEST.json"))
    assert m["finite"] is True, (d, m)
    path = d + "/transformer/diffusion_pytorch_model.safetensors"
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        vals = struct.unpack("<%df" % ((b - a) // 4), raw[8 + n + a:8 + n + b])
        assert all(math.isfinite(v) for v in vals), (d, name)
PY
checks=$((checks + 1)); echo "ok: every checkpoint of the diverged run is finite"

# --- 3. A checkpoint's manifest must cover its kind's files and agree on the step. -----------
STEPS=4 EVERY=2 write_config "$tmp/m.yaml" "$tmp/m"
rc=0; train_ranks 1 --config "$tmp/m.yaml" || rc=$?
[ $rc -eq 0 ] || fail "manifest run exited $rc"
good=$tmp/m/checkpoints/checkpoint_step_4
expect_exit 0 "$bt" ckpt verify "$good"
edit_manifest() {  # DIR PYTHON-EXPRESSION-ON-m
  python3 - "$1" "$2" <<'PY'
import json, sys
p = sys.argv[1] + "/MANIFEST.json"
m = json.load(open(p))
exec(sys.argv[2])
json.dump(m, open(p, "w"))
PY
}
manifest_case() {  # NAME EDIT EXPECTED-MESSAGE
  local d=$tmp/mcase/$1/checkpoint_step_4
  rm -rf "$tmp/mcase/$1" && mkdir -p "$tmp/mcase/$1" && cp -r "$good" "$d"
  eval "$2"
  expect_exit 65 "$bt" ckpt verify "$d"
  expect_in "$err" "$3"
}
manifest_case no_weights \
  'edit_manifest "$d" "m[\"files\"] = [f for f in m[\"files\"] if \"diffusion\" not in f[\"path\"]]"; printf x >>"$d/transformer/diffusion_pytorch_model.safetensors"' \
  "needs transformer/diffusion_pytorch_model.safetensors, which the manifest does not list"
manifest_case no_state 'edit_manifest "$d" "m[\"files\"] = [f for f in m[\"files\"] if f[\"path\"] != \"trainer_state.json\"]"' \
  "needs trainer_state.json"
manifest_case step_name 'edit_manifest "$d" "m[\"step\"] = 2"' "manifest step 2 differs from the folder name's 4"
# trainer_state.json of another step, re-hashed so that only the steps disagree.
manifest_case state_step \
  'sed -i "s/\"step\": 4/\"step\": 2/" "$d/trainer_state.json" && "$baton" manifest write "$d" --step 4 --kind full' \
  "trainer_state.json: step 2 differs from the manifest's step 4"
manifest_case unknown_kind 'edit_manifest "$d" "m[\"kind\"] = \"partial\""' "manifest kind 'partial' is not known"
manifest_case escape 'edit_manifest "$d" "m[\"files\"].append(dict(path=\"../../etc/passwd\", bytes=1, xxh3=\"0\"))"' \
  "which is not a path inside the folder"
manifest_case twice 'edit_manifest "$d" "m[\"files\"].append(m[\"files\"][0])"' "twice"

# --- 4. An exact resume is the same run or nothing. ----------------------------------------
STEPS=8 write_config "$tmp/same.yaml" "$tmp/same"
rc=0; train_ranks 1 --config "$tmp/same.yaml" --stop-after 3 || rc=$?
[ $rc -eq 75 ] || fail "same-run segment exited $rc"
"$bt" synth-data --out "$tmp/ds_other" --episodes 16 --seed 8 --frames 5:12 --height 4 --width 4 \
  --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null
cp -r "$tmp/ds" "$tmp/ds_moved"
refuse() {  # SED-EXPRESSION EXPECTED-KEY
  sed "$1" "$tmp/same.yaml" >"$tmp/changed.yaml"
  expect_exit 78 "$bt" train --config "$tmp/changed.yaml"
  expect_in "$err" "belongs to another run"
  expect_in "$err" "$2"
}
refuse 's/seed: 11/seed: 12/' "run.seed: 11 (checkpoint) vs 12 (run)"
refuse 's/pad_multiple: 4/pad_multiple: 8/' "data.pad_multiple: 4 (checkpoint) vs 8 (run)"
refuse 's/dtype: float32/dtype: float64/' "train.dtype: float32 (checkpoint) vs float64 (run)"
refuse 's/pool_factor: 2}/pool_factor: 2, plan: per_rank}/' "data.plan: global (checkpoint) vs per_rank (run)"
refuse "s#path: $tmp/ds,#path: $tmp/ds_other,#" "dataset fingerprint"
refuse "s#path: $tmp/ds,#path: $tmp/ds_moved,#" "data.path: $tmp/ds (checkpoint) vs $tmp/ds_moved (run)"
# Nothing was written by the refused attempts: the run still continues exactly.
rc=0; train_ranks 1 --config "$tmp/same.yaml" || rc=$?
[ $rc -eq 0 ] || fail "the unchanged run must still resume, got $rc"
# --resume none on a folder holding a run's checkpoints refuses; --start-over moves them aside.
expect_exit 78 "$bt" train --config "$tmp/same.yaml" --resume none
expect_in "$err" "holds 2 valid checkpoint(s) of a run (newest: step 8)"
before=$(ls "$tmp/same/checkpoints")
[ "$before" = "$(printf 'checkpoint_step_3\ncheckpoint_step_8')" ] || fail "refusal changed the checkpoints: $before"
STEPS=2 write_config "$tmp/over.yaml" "$tmp/same"
expect_exit 0 "$bt" train --config "$tmp/over.yaml" --resume none --start-over
expect_in "$out" "start over: moved 2 checkpoint(s) to $tmp/same/checkpoints.replaced-"
[ "$(ls "$tmp/same/checkpoints")" = checkpoint_step_2 ] || fail "start over left $(ls "$tmp/same/checkpoints")"
ls -d "$tmp"/same/checkpoints.replaced-*/checkpoint_step_8 >/dev/null || fail "start over lost the old checkpoints"

# --- 5. A target below the checkpoint's step is refused, not reported as done. ----------------
STEPS=1 write_config "$tmp/below.yaml" "$tmp/same"
expect_exit 78 "$bt" train --config "$tmp/below.yaml" --resume "$tmp/same/checkpoints/checkpoint_step_2"
expect_in "$err" "run.steps 1 is below the step of"
tail -n1 "$(events_file "$tmp/same" local 0)" | grep -q '"reason":"error"' || fail "the refusal has no segment_end error record"
checks=$((checks + 1)); echo "ok: the refusal is recorded as segment_end error"

# --- 6. Signals: SIGINT checkpoints like SIGTERM; a signal at any moment ends in 75. ----------
STEPS=400 write_config "$tmp/sig.yaml" "$tmp/sig"
"$bt" train --config "$tmp/sig.yaml" >>"$tmp/train.log" 2>&1 &
pid=$!
ev=$(events_file "$tmp/sig" local 0)
for _ in $(seq 300); do grep -q '"step":1,' "$ev" 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
rc=0; wait $pid || rc=$?
[ $rc -eq 75 ] || fail "SIGINT: expected 75, got $rc"
tail -n1 "$ev" | grep -q '"reason":"signal","signal":"INT"' ||
  tail -n1 "$ev" | grep -q '"signal":"INT"' || fail "SIGINT: no segment_end"
ls "$tmp/sig/checkpoints" | grep -q checkpoint_step_ || fail "SIGINT: no checkpoint"
checks=$((checks + 1)); echo "ok: SIGINT checkpoints and exits 75"
# Signals from the first milliseconds after exec (while libtorch loads and initialises), during
# set-up and around the first steps: always 75, always a segment_end, never a half-written
# checkpoint.
bt_exe=$(realpath "$bt")
for delay in 0.01 0.05 0.15 0.4 0.8; do
  for sig in USR1 TERM; do
    d=$tmp/early_${sig}_$delay
    STEPS=400 write_config "$tmp/early.yaml" "$d"
    "$bt" train --config "$tmp/early.yaml" >>"$tmp/train.log" 2>&1 &
    pid=$!
    # "After start" = once the process is baton-train (exec done), not the shell's fork before it.
    for _ in $(seq 2000); do
      case $(readlink "/proc/$pid/exe" 2>/dev/null) in "$bt_exe" | "$bt_exe"-program) break ;; esac
    done
    sleep "$delay"
    kill -"$sig" $pid
    rc=0; wait $pid || rc=$?
    [ $rc -eq 75 ] || fail "$sig after ${delay}s: expected 75, got $rc"
    tail -n1 "$(events_file "$d" local 0)" | grep -q '"segment_end"' || fail "$sig after ${delay}s: no segment_end"
    for c in "$d"/checkpoints/checkpoint_step_*; do
      [ -e "$c" ] || continue
      "$bt" ckpt verify "$c" >/dev/null || fail "$sig after ${delay}s: invalid $c"
    done
  done
done
checks=$((checks + 1)); echo "ok: USR1/TERM from 0.01 to 0.8 s after exec all end in 75 with a segment_end"

echo "$checks passed, 0 failed"
