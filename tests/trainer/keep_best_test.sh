#!/usr/bin/env bash
# Keep-best retention and `baton export`, end to end (docs/eval.md, "Retention" and "Export"):
#   1. a float64 run with checkpoint.keep_best {eval.loss, k: 2}, keep_last 2, keep_every 6 and
#      a save at every step is stopped (exit 75, what a requeue resumes from) after every step:
#      7 times on 1 rank, then resumed on 2 ranks to the end. The test acts as the eval job:
#      between segments it writes evals/step_<N>.json for the targets saved before, with values
#      it chooses (ties included), and never for step 4. After each save the checkpoints on disk
#      are exactly the rule's set, computed here in python from the whole history; step 4 is
#      never deleted;
#   2. `baton export RUN --best DIR` picks the best evaluated checkpoint on disk, writes
#      transformer/ and provenance.json (run, step, eval metrics, config hash, data fingerprint,
#      both binaries' commit), and the folder loads with `baton-train forward --init-from` giving
#      outputs bit-identical to forward from the checkpoint; --dtype bf16 writes BF16 tensors; a
#      non-empty DIR is 73, a corrupted checkpoint 65 naming the file, nothing half-written.
# usage: keep_best_test.sh BATON_TRAIN BATON
source "$(dirname "$0")/common.sh"
baton=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
PY=${BATON_PYTHON:-/usr/bin/python3}
export BATON_HOME=$tmp/home BATON_TRAIN_BIN=$bt
make_dataset "$tmp/ds" 24 5:12
run=$tmp/run
cat >"$tmp/kb.yaml" <<YAML
run: {name: kb, dir: $run, steps: 14, seed: 11}
data: {path: $tmp/ds, batch_size: 4, pad_multiple: 4, pool_factor: 2}
model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}
optim: {lr: 2.0e-3, warmup_steps: 3, grad_accum: 1}
checkpoint: {every: 1, keep_last: 2, keep_every: 6, keep_best: {metric: eval.loss, k: 2}}
eval: {fraction: 0.25, seed: 5, every: 2, mode: job}
train: {dtype: float64, log_every: 100}
YAML

# The values the "eval job" reports, by step (6 and 10 tie; 4 is never evaluated).
values='{"2": 0.9, "6": 0.5, "8": 0.7, "10": 0.5, "12": 0.3, "14": 0.8}'

# write_evals T: results for every target saved before step T that has none yet.
write_evals() {
  "$PY" - "$run" "$1" "$values" <<'PY'
import json, os, sys
run, t, values = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
os.makedirs(run + "/evals", exist_ok=True)
for s, v in values.items():
    s = int(s)
    path = "%s/evals/step_%d.json" % (run, s)
    if s >= t or os.path.exists(path):
        continue
    assert os.path.isdir("%s/checkpoints/checkpoint_step_%d" % (run, s)), "target %d deleted" % s
    rec = {"type": "eval", "step": s, "checkpoint": "checkpoint_step_%d" % s, "mode": "job",
           "metrics": {"loss": v, "loss_video": v / 2, "loss_action": v / 2}, "episodes": 6}
    with open(path + ".tmp", "w") as f:
        json.dump(rec, f)
    os.rename(path + ".tmp", path)
PY
}

# check_kept T: the checkpoints on disk after the save of step T are the rule's set.
check_kept() {
  "$PY" - "$run" "$1" "$src/tests/lib" <<'PY' || fail "kept set after step $1"
import glob, json, sys
sys.path.insert(0, sys.argv[3])
from retention_rule import on_disk, rule_set
run, t = sys.argv[1], int(sys.argv[2])
steps, keep_last, keep_every, k, eval_every = 14, 2, 6, 2, 2
saves = list(range(1, t + 1))
value = {}
for path in glob.glob(run + "/evals/step_*.json"):
    r = json.load(open(path))
    value[r["step"]] = r["metrics"]["loss"]
want = rule_set(saves, value, lambda s: s % eval_every == 0 or s == steps, keep_last, keep_every, k)
have = on_disk(run)
if have != want:
    sys.exit("after step %d: on disk %s, the rule's set %s" % (t, sorted(have), sorted(want)))
print("ok: after step %d the kept set is %s" % (t, sorted(have)))
PY
  checks=$((checks + 1))
}

world=1
for t in $(seq 1 14); do
  [ "$t" -eq 8 ] && world=2 # the resume on another world size
  want=75
  [ "$t" -eq 14 ] && want=0
  rc=0; train_ranks "$world" --config "$tmp/kb.yaml" --stop-after 1 || rc=$?
  [ $rc -eq $want ] || fail "segment to step $t on $world rank(s) exited $rc: $(tail -3 "$tmp/train.log")"
  [ -d "$run/checkpoints/checkpoint_step_$t" ] || fail "no checkpoint at $t"
  check_kept "$t"
  [ "$t" -lt 4 ] || [ -d "$run/checkpoints/checkpoint_step_4" ] || fail "unevaluated step 4 deleted"
  write_evals "$((t + 1))"
done
ok() { checks=$((checks + 1)); echo "ok: $*"; }
ok "7 stops on 1 rank, a resume on 2 ranks: the kept set was the rule's after every save"

# ---- 2. Export. --------------------------------------------------------------------------------
cp "$tmp/kb.yaml" "$run/run.yaml"  # what submit freezes; export reads keep_best's metric there
best=$("$PY" - "$run" "$values" <<'PY'
import json, os, sys
run, values = sys.argv[1], json.loads(sys.argv[2])
on = [(v, int(s)) for s, v in values.items()
      if os.path.isdir("%s/checkpoints/checkpoint_step_%s" % (run, s))]
print(min(on)[1])
PY
)
expect_exit 0 "$baton" export "$run" --best "$tmp/exp"
"$PY" - "$tmp/exp/provenance.json" "$best" "$("$baton" --version)" "$("$bt" --version)" <<'PY' ||
import json, sys
p = json.load(open(sys.argv[1]))
assert p["step"] == int(sys.argv[2]), p["step"]
assert p["eval"]["loss"] == 0.3 and p["picked_by"] == "--best eval.loss", p
assert p["run"]["name"] == "run" and p["dataset_fingerprint"] and p["config_hash"], p
for key, text in (("baton", sys.argv[3]), ("baton_train", sys.argv[4])):
    assert p[key]["commit"] and p[key]["commit"] in text, (key, p[key], text)
assert p["dtype"] == "fp32" and "transformer/config.json" in p["files"], p
PY
  fail "provenance: $(cat "$tmp/exp/provenance.json")"
ok "--best exported step $best with its provenance"
ckpt=$run/checkpoints/checkpoint_step_$best
"$PY" "$src/tests/upstream/upstream_fixture.py" inputs "$ckpt" "$tmp/in.safetensors"
expect_exit 0 "$bt" forward --init-from "$ckpt" --inputs "$tmp/in.safetensors" \
  --out "$tmp/from_ckpt.safetensors" --dtype float64
expect_exit 0 "$bt" forward --init-from "$tmp/exp" --inputs "$tmp/in.safetensors" \
  --out "$tmp/from_export.safetensors" --dtype float64
cmp -s "$tmp/from_ckpt.safetensors" "$tmp/from_export.safetensors" ||
  fail "forward from the export differs from forward from the checkpoint"
ok "the export's forward is bit-identical to the checkpoint's (float64)"

expect_exit 0 "$baton" export "$run" --step 12 "$tmp/exp16" --dtype bf16
"$PY" - "$tmp/exp16/transformer" <<'PY' || fail "bf16 export holds other dtypes"
import glob, json, struct, sys
files = glob.glob(sys.argv[1] + "/*.safetensors")
assert files
for f in files:
    raw = open(f, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    dtypes = {v["dtype"] for k, v in head.items() if k != "__metadata__"}
    assert dtypes == {"BF16"}, (f, dtypes)
PY
expect_exit 0 "$bt" forward --init-from "$tmp/exp16" --inputs "$tmp/in.safetensors" \
  --out "$tmp/o16.safetensors"
ok "--dtype bf16 writes BF16 tensors that load"

mkdir -p "$tmp/full" && echo x >"$tmp/full/keep"
expect_exit 73 "$baton" export "$run" --best "$tmp/full"
[ "$(ls "$tmp/full")" = keep ] || fail "a refused export wrote into the folder"
expect_exit 64 "$baton" export "$run" --best --step 12 "$tmp/both"

# A byte flipped after the commit: 65 naming the file, nothing written.
f=$(find "$run/checkpoints/checkpoint_step_12/transformer" -name '*.safetensors' | sort | head -1)
"$PY" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[-3]^=0xff; open(p,"wb").write(b)' "$f"
expect_exit 65 "$baton" export "$run" --step 12 "$tmp/bad"
expect_in "$err" "$f"
[ ! -e "$tmp/bad" ] || fail "a refused export left $tmp/bad"
[ -z "$(find "$tmp" -maxdepth 1 -name '.bad.export.*')" ] || fail "a refused export left its temp folder"
expect_exit 66 "$baton" export "$run" --step 5 "$tmp/gone"
echo "keep_best_test: $checks checks passed"
