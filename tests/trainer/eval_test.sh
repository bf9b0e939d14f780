#!/usr/bin/env bash
# The trainer's eval (docs/eval.md), end to end on a tiny synthetic dataset in float64:
#   - held-out episodes (a list, a seeded fraction) are never drawn for training, and a resume
#     with another eval set is refused like another dataset;
#   - inline mode writes evals/step_<N>.json and an `eval` event exactly at the eval targets, and
#     training is bit for bit the run that holds the same episodes out without evaluating;
#   - a checkpoint whose stop came before its eval is evaluated by the resumed segment;
#   - `baton-train eval` recomputes a checkpoint's value bitwise, and on 2 and 3 ranks within
#     1e-12; a checkpoint corrupted after its commit is 65 naming the file, nothing written;
#   - bad eval sets are 78 naming the episodes.
# usage: eval_test.sh BATON_TRAIN
source "$(dirname "$0")/common.sh"
make_dataset "$tmp/ds" 16 5:12
export DTYPE=float64

# eval_ranks WORLD ARGS...: `baton-train eval ARGS` on WORLD ranks; rank 0's stdout in $out.
eval_ranks() {
  local world=$1; shift
  local store="$tmp/rdzv.$RANDOM.$RANDOM" pids=() r rc
  rm -f "$store"
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world BATON_RDZV_FILE=$store "$bt" eval "$@" >"$tmp/eval.$r.out" \
      2>"$tmp/eval.$r.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    rc=0; wait "$p" || rc=$?
    [ $rc -eq 0 ] || fail "eval on $world ranks exited $rc: $(cat "$tmp"/eval.*.err)"
  done
  out=$(cat "$tmp/eval.0.out")
}

# --- 1. Bad eval sets: 78 naming the episodes. ------------------------------------------------
bad() {  # YAML-LINE NEEDLE
  STEPS=2 write_config "$tmp/bad.yaml" "$tmp/bad" "$1"
  expect_exit 78 "$bt" train --config "$tmp/bad.yaml"
  expect_in "$err" "$2"
  [ ! -d "$tmp/bad/checkpoints" ] || fail "a refused eval set must not train ($1)"
}
bad "eval: {episodes: [3, 99, 120]}" "episode(s) 99, 120 are not in data.path"
bad "eval: {fraction: 0.01, seed: 1}" "is an empty eval set"
bad "eval: {episodes: []}" "the eval set is empty"
bad "eval: {episodes: [$(seq -s, 0 15)]}" "leaves none to train on"
cp -r "$tmp/ds" "$tmp/ds_copy"
bad "eval: {data: $tmp/ds_copy}" "are training episodes of data.path"
expect_in "$err" "ep_00000"
STEPS=2 write_config "$tmp/noeval.yaml" "$tmp/noeval"
expect_exit 78 "$bt" eval --config "$tmp/noeval.yaml" --checkpoint "$tmp/x/checkpoints/checkpoint_step_2"
expect_in "$err" "has no eval: section"
checks=$((checks + 1)); echo "ok: bad eval sets are 78 naming the episodes"

# --- 2. Inline mode at exactly the targets; training as without the eval. --------------------
held="eval: {episodes: [1, 4, 9], every: 2, seed: 3"
STEPS=8 EVERY=2 write_config "$tmp/inline.yaml" "$tmp/inline" "$held, mode: inline}"
STEPS=8 EVERY=2 write_config "$tmp/job.yaml" "$tmp/job" "$held, mode: job}"
BATON_EPISODE_LOG=$tmp/inline.eplog train_ranks 1 --config "$tmp/inline.yaml" ||
  fail "inline run: $(tail -5 "$tmp/train.log")"
BATON_EPISODE_LOG=$tmp/job.eplog train_ranks 1 --config "$tmp/job.yaml" ||
  fail "job-mode run: $(tail -5 "$tmp/train.log")"
python3 - "$tmp" <<'PY' || fail "inline eval events and files"
import glob, json, os, sys
tmp = sys.argv[1]
rows = [json.loads(l) for p in glob.glob(tmp + "/inline/events/*.jsonl") for l in open(p)]
evals = [r for r in rows if r["type"] == "eval"]
# saves at 2, 4, 6, 8; every 2nd one is evaluated
assert [e["step"] for e in evals] == [4, 8], evals
files = sorted(os.listdir(tmp + "/inline/evals"))
assert files == ["step_4.json", "step_8.json"], files
for e in evals:
    f = json.load(open(f"{tmp}/inline/evals/step_{e['step']}.json"))
    assert f["metrics"] == e["metrics"] and f["mode"] == "inline", (f, e)
    assert e["episodes"] == 3 and e["valid_frames"] > 0 and e["seconds"] >= 0, e
    m = e["metrics"]
    assert m["loss"] > 0 and m["loss_video"] > 0 and m["loss_action"] > 0, m
    assert e["checkpoint"].endswith(f"checkpoint_step_{e['step']}"), e
assert evals[0]["metrics"] != evals[1]["metrics"], "two checkpoints, one value"
# the eval follows its checkpoint's commit
ck = [r["step"] for r in rows if r["type"] == "checkpoint"]
order = [(r["type"], r["step"]) for r in rows if r["type"] in ("checkpoint", "eval")]
for s in (4, 8):
    assert order.index(("checkpoint", s)) < order.index(("eval", s)), order
job_rows = [json.loads(l) for p in glob.glob(tmp + "/job/events/*.jsonl") for l in open(p)]
assert not [r for r in job_rows if r["type"] == "eval"] and not os.path.exists(tmp + "/job/evals")
PY
checks=$((checks + 1)); echo "ok: inline evals at exactly steps 4 and 8, after their commits"
[ "$(effective_steps "$tmp/inline")" = "$(effective_steps "$tmp/job")" ] ||
  fail "training with inline evals differs from training without"
same_checkpoint "$tmp/inline/checkpoints/checkpoint_step_8" "$tmp/job/checkpoints/checkpoint_step_8"
for f in "$tmp"/inline.eplog.0 "$tmp"/job.eplog.0; do
  python3 - "$f" <<'PY' || fail "held-out episodes drawn for training ($f)"
import sys
drawn = set()
for line in open(sys.argv[1]):
    drawn.update(int(x) for x in line.split()[1:])
assert not drawn & {1, 4, 9}, sorted(drawn)
assert drawn == set(range(16)) - {1, 4, 9}, sorted(drawn)
PY
done
checks=$((checks + 1)); echo "ok: episodes 1, 4, 9 never trained; the other 13 all were"

# --- 3. A stop right after a target's save: the resumed segment evaluates it. -----------------
STEPS=8 EVERY=2 write_config "$tmp/stop.yaml" "$tmp/stop" "$held, mode: inline}"
rc=0; train_ranks 1 --config "$tmp/stop.yaml" --stop-after 4 || rc=$?
[ $rc -eq 75 ] || fail "the stopped segment exited $rc"
[ ! -e "$tmp/stop/evals/step_4.json" ] || fail "a stopping segment evaluated"
train_ranks 1 --config "$tmp/stop.yaml" || fail "resumed segment: $(tail -5 "$tmp/train.log")"
python3 - "$tmp" <<'PY' || fail "the resumed segment's eval"
import json, sys
tmp = sys.argv[1]
a = json.load(open(tmp + "/stop/evals/step_4.json"))["metrics"]
b = json.load(open(tmp + "/inline/evals/step_4.json"))["metrics"]
assert a == b, (a, b)
PY
[ "$(effective_steps "$tmp/stop")" = "$(effective_steps "$tmp/job")" ] ||
  fail "the stopped and resumed run trained differently"
checks=$((checks + 1)); echo "ok: the checkpoint of the stop is evaluated on resume, same value"

# --- 4. The command: bitwise recompute, world sizes 1, 2, 3 within 1e-12. ---------------------
ck8=$tmp/job/checkpoints/checkpoint_step_8
eval_ranks 1 --config "$tmp/job.yaml" --checkpoint "$ck8" --json
echo "$out" >"$tmp/w1a.json"
eval_ranks 1 --config "$tmp/job.yaml" --checkpoint "$ck8" --json
echo "$out" >"$tmp/w1b.json"
eval_ranks 2 --config "$tmp/job.yaml" --checkpoint "$ck8" --json
echo "$out" >"$tmp/w2.json"
eval_ranks 3 --config "$tmp/job.yaml" --checkpoint "$ck8" --json
echo "$out" >"$tmp/w3.json"
[ -z "$(cat "$tmp/eval.1.out" "$tmp/eval.2.out")" ] || fail "ranks 1 and 2 printed the result"
python3 - "$tmp" <<'PY' || fail "eval values"
import json, sys
tmp = sys.argv[1]
w = {k: json.loads(open(f"{tmp}/{k}.json").read()) for k in ("w1a", "w1b", "w2", "w3")}
assert w["w1a"]["metrics"] == w["w1b"]["metrics"], "a recompute differs"
inline = json.load(open(tmp + "/inline/evals/step_8.json"))["metrics"]
assert w["w1a"]["metrics"] == inline, (w["w1a"], inline)
for k in ("w2", "w3"):
    for m, v in w["w1a"]["metrics"].items():
        d = abs(w[k]["metrics"][m] - v)
        assert d <= 1e-12 * max(1.0, abs(v)), (k, m, v, w[k]["metrics"][m], d)
    assert w[k]["episodes"] == 3 and w[k]["valid_frames"] == w["w1a"]["valid_frames"], w[k]
e = w["w3"]
assert e["type"] == "eval" and e["step"] == 8 and e["mode"] == "job", e
assert e["checkpoint"].endswith("/job/checkpoints/checkpoint_step_8"), e
assert e["config_hash"] and e["job_id"] == "", e
f = json.load(open(tmp + "/job/evals/step_8.json"))
assert f == e, (f, e)
print("world sizes 1/2/3:", [w[k]["metrics"]["loss"] for k in ("w1a", "w2", "w3")])
PY
checks=$((checks + 1)); echo "ok: recompute bitwise equal, inline == command, ranks 1/2/3 within 1e-12"

# --- 5. A checkpoint corrupted after its commit: 65 naming the file, nothing written. ---------
mkdir -p "$tmp/corrupt/checkpoints"
cp -r "$tmp/job/checkpoints/checkpoint_step_4" "$tmp/corrupt/checkpoints/"
victim=$(cd "$tmp/corrupt/checkpoints/checkpoint_step_4" && find . -name '*.safetensors' | sort | head -1)
python3 - "$tmp/corrupt/checkpoints/checkpoint_step_4/$victim" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-5] ^= 0x40
open(p, "wb").write(bytes(b))
PY
expect_exit 65 "$bt" eval --config "$tmp/job.yaml" --checkpoint "$tmp/corrupt/checkpoints/checkpoint_step_4"
expect_in "$err" "${victim#./}"
[ ! -e "$tmp/corrupt/evals" ] || fail "a corrupted checkpoint got an eval result"
# A file the weights-only load does not read is hashed too.
rm -r "$tmp/corrupt/checkpoints/checkpoint_step_4"
cp -r "$tmp/job/checkpoints/checkpoint_step_4" "$tmp/corrupt/checkpoints/"
python3 - "$tmp/corrupt/checkpoints/checkpoint_step_4/optimizer.safetensors" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-3] ^= 0x01
open(p, "wb").write(bytes(b))
PY
expect_exit 65 "$bt" eval --config "$tmp/job.yaml" --checkpoint "$tmp/corrupt/checkpoints/checkpoint_step_4"
expect_in "$err" "optimizer.safetensors"
[ ! -e "$tmp/corrupt/evals" ] || fail "a checkpoint with a corrupted optimizer file got an eval result"
rm "$tmp/corrupt/checkpoints/checkpoint_step_4/MANIFEST.json"
expect_exit 65 "$bt" eval --config "$tmp/job.yaml" --checkpoint "$tmp/corrupt/checkpoints/checkpoint_step_4"
expect_in "$err" "MANIFEST.json"
checks=$((checks + 1)); echo "ok: a corrupted checkpoint is 65 naming $victim, and never evaluated"

# --- 6. A seeded fraction: held out, in the fingerprint. --------------------------------------
STEPS=3 EVERY=3 write_config "$tmp/frac.yaml" "$tmp/frac" "eval: {fraction: 0.25, seed: 5}"
BATON_EPISODE_LOG=$tmp/frac.eplog train_ranks 1 --config "$tmp/frac.yaml" --stop-after 2 ||
  [ $? -eq 75 ] || fail "fraction run: $(tail -5 "$tmp/train.log")"
heldout=$(grep -o 'eval: 4 held-out episode(s) of data.path: [0-9 ]*' "$tmp/train.log" | tail -1 |
  sed 's/.*: //')
[ -n "$heldout" ] || fail "the run did not say which 4 episodes it holds out"
python3 - "$tmp/frac.eplog.0" "$heldout" <<'PY' || fail "a held-out episode of the fraction was trained"
import sys
held = {int(x) for x in sys.argv[2].split()}
drawn = set()
for line in open(sys.argv[1]):
    drawn.update(int(x) for x in line.split()[1:])
assert len(held) == 4 and not drawn & held and drawn == set(range(16)) - held, (held, drawn)
PY
sed 's/seed: 5}/seed: 6}/' "$tmp/frac.yaml" >"$tmp/frac6.yaml"
expect_exit 78 "$bt" train --config "$tmp/frac6.yaml"
expect_in "$err" "belongs to another run"
expect_in "$err" "eval: held-out set"
checks=$((checks + 1)); echo "ok: eval.fraction holds out episodes $heldout; another eval.seed is another run"

echo "eval: $checks checks passed"
