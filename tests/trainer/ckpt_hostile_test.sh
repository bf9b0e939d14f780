#!/usr/bin/env bash
# Hostile checkpoints: each must be a named data error (65), and on 2 ranks every rank must leave
# with that same code (not one rank 65 and the other 70 from a reset connection, which the
# launcher would take for a crash):
#   - a moment moved into another rank's optimizer file (only its owner's read fails);
#   - a rank whose write fails in a save (the others must not wait for it);
#   - a moment of the wrong shape in a checkpoint whose config matches;
#   - a negative or impossible sampler.micro_index in trainer_state.json;
#   - a file of the checkpoint that is a symbolic link to one outside it.
# Each tampered checkpoint is re-hashed (`baton manifest write`) so that only the case's own
# check has something to find. usage: ckpt_hostile_test.sh BATON_TRAIN BATON
source "$(dirname "$0")/common.sh"
baton=$2
make_dataset "$tmp/ds" 16 5:12

# rehash DIR STEP: the manifest over the folder's files as they are now.
rehash() { "$baton" manifest write "$1" --step "$2" --kind full; }
# seg_end RUN_DIR: the exit code of the last segment_end record.
seg_end() { grep '"type":"segment_end"' "$(events_file "$1" local 0)" | tail -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["exit_code"])'; }
# ranks2 LOG ARGS...: both ranks of a 2-rank run; sets rc0, rc1.
ranks2() {
  local log=$1; shift
  local store=$tmp/rdzv.$RANDOM.$RANDOM
  RANK=0 WORLD_SIZE=2 BATON_RDZV_FILE=$store "$bt" train "$@" >"$log.0" 2>&1 &
  local p0=$!
  RANK=1 WORLD_SIZE=2 BATON_RDZV_FILE=$store "$bt" train "$@" >"$log.1" 2>&1 &
  local p1=$!
  rc0=0; wait $p0 || rc0=$?
  rc1=0; wait $p1 || rc1=$?
}

# --- 1. A moment in the wrong rank's file: on 2 ranks both must exit 65. ----------------------
SHARD=optimizer STEPS=2 ACCUM=1 write_config "$tmp/sh.yaml" "$tmp/sh"
rc=0; train_ranks 2 --config "$tmp/sh.yaml" || rc=$?
[ $rc -eq 0 ] || fail "sharded run exited $rc: $(tail -3 "$tmp/train.log")"
sed -i 's/steps: 2,/steps: 3,/' "$tmp/sh.yaml"
cp -r "$tmp/sh" "$tmp/shi"
sed "s#dir: $tmp/sh#dir: $tmp/shi#" "$tmp/sh.yaml" >"$tmp/shi.yaml"
# One of rank 1's moments, physically moved into rank 0's file (index unchanged).
ck=$tmp/sh/checkpoints/checkpoint_step_2
moved=$(python3 - "$ck" <<'PY'
import json, struct, sys
d = sys.argv[1]
def read(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
def write(p, t):
    h, off, blob = {}, 0, b""
    for k, (dt, shape, b) in t.items():
        h[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}; off += len(b); blob += b
    text = json.dumps(h).encode(); text += b" " * ((8 - (len(text) + 8) % 8) % 8)
    open(p, "wb").write(struct.pack("<Q", len(text)) + text + blob)
f1, f2 = d + "/optimizer-00001-of-00002.safetensors", d + "/optimizer-00002-of-00002.safetensors"
a, b = read(f1), read(f2)
name = sorted(k for k in b if k.startswith("exp_avg."))[0]
a[name] = b.pop(name)
write(f1, a); write(f2, b)
print(name)
PY
)
rehash "$ck" 2
"$bt" ckpt verify "$ck" >/dev/null || fail "the re-hashed checkpoint should pass ckpt verify"
ranks2 "$tmp/wrongfile" --config "$tmp/sh.yaml"
[ $rc0 -eq 65 ] && [ $rc1 -eq 65 ] ||
  fail "tensor in the wrong rank file: ranks exited $rc0 and $rc1, expected 65 and 65: $(tail -4 "$tmp/wrongfile.0")"
grep -q "'$moved'" "$tmp/wrongfile.1" || fail "rank 1 does not name the tensor: $(tail -4 "$tmp/wrongfile.1")"
[ "$(seg_end "$tmp/sh")" = 65 ] || fail "rank 0's segment_end is not exit 65"
checks=$((checks + 1)); echo "ok: a moment moved into another rank's file: both ranks exit 65"
# The index placing that moment in rank 0's file: only its owner, rank 1, reads it there and
# finds it missing; rank 0 exits with rank 1's code and names rank 1's error.
ck=$tmp/shi/checkpoints/checkpoint_step_2
python3 - "$ck/optimizer.safetensors.index.json" "$moved" <<'PY'
import json, sys
p, name = sys.argv[1], sys.argv[2]
j = json.load(open(p))
assert j["weight_map"][name] == "optimizer-00002-of-00002.safetensors", j["weight_map"][name]
j["weight_map"][name] = "optimizer-00001-of-00002.safetensors"
json.dump(j, open(p, "w"), indent=2)
PY
rehash "$ck" 2
ranks2 "$tmp/wrongindex" --config "$tmp/shi.yaml"
[ $rc0 -eq 65 ] && [ $rc1 -eq 65 ] ||
  fail "index names the wrong rank file: ranks exited $rc0 and $rc1, expected 65 and 65: $(tail -4 "$tmp/wrongindex.0")"
grep -q "'$moved'" "$tmp/wrongindex.1" || fail "rank 1 does not name the tensor: $(tail -4 "$tmp/wrongindex.1")"
grep -q "rank 1 of 2 failed while loading the checkpoint (exit 65): .*'$moved'" "$tmp/wrongindex.0" ||
  fail "rank 0 does not name rank 1's failure: $(tail -4 "$tmp/wrongindex.0")"
[ "$(seg_end "$tmp/shi")" = 65 ] || fail "rank 0's segment_end is not exit 65"
checks=$((checks + 1)); echo "ok: only rank 1 finds the error: both ranks exit 65, rank 0 names rank 1's error"

# --- 2. A write that fails on rank 1 only: both ranks exit 74, no checkpoint. ----------------
SHARD=optimizer STEPS=3 ACCUM=1 write_config "$tmp/wf.yaml" "$tmp/wf"
ranks2 "$tmp/writefail" --config "$tmp/wf.yaml" --fault write_error --fault-at-step 3 --fault-rank 1
[ $rc0 -eq 74 ] && [ $rc1 -eq 74 ] ||
  fail "a write failing on rank 1: ranks exited $rc0 and $rc1, expected 74 and 74: $(tail -4 "$tmp/writefail.0")"
grep -q "rank 1 of 2 failed while writing its part of the checkpoint (exit 74)" "$tmp/writefail.0" ||
  fail "rank 0 does not name rank 1's failure: $(tail -4 "$tmp/writefail.0")"
[ ! -d "$tmp/wf/checkpoints/checkpoint_step_3" ] || fail "a save that failed on one rank left a checkpoint"
checks=$((checks + 1)); echo "ok: a write failing on rank 1: both ranks exit 74, no checkpoint"

# One-rank checkpoints for the remaining cases.
STEPS=2 ACCUM=1 write_config "$tmp/one.yaml" "$tmp/one"
rc=0; train_ranks 1 --config "$tmp/one.yaml" || rc=$?
[ $rc -eq 0 ] || fail "1-rank run exited $rc"
good=$tmp/one/checkpoints/checkpoint_step_2
sed -i 's/steps: 2,/steps: 3,/' "$tmp/one.yaml"
# copy_run NAME: a copy of the run whose checkpoint the case tampers with; prints its checkpoint.
copy_run() {
  rm -rf "$tmp/$1" && cp -r "$tmp/one" "$tmp/$1"
  sed "s#dir: $tmp/one#dir: $tmp/$1#" "$tmp/one.yaml" >"$tmp/$1.yaml"
  echo "$tmp/$1/checkpoints/checkpoint_step_2"
}

# --- 3. A moment of the wrong shape, the config unchanged: damaged (65), not a config error. ---
ck=$(copy_run shape)
python3 - "$ck/optimizer.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
raw = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
name = next(k for k, v in h.items() if k.startswith("exp_avg.") and len(v["shape"]) == 2 and v["shape"][0] != v["shape"][1])
h[name]["shape"] = h[name]["shape"][::-1]
text = json.dumps(h, separators=(",", ":")).encode()
assert len(text) <= n
raw[8:8 + n] = text + b" " * (n - len(text))
open(p, "wb").write(raw)
PY
rehash "$ck" 2
expect_exit 65 "$bt" train --config "$tmp/shape.yaml"
expect_in "$err" "optimizer.safetensors: tensor 'exp_avg."
expect_in "$err" "checkpoint's own config.json"

# --- 4. sampler.micro_index out of range: a named data error. ----------------------------------
for v in -3 999; do
  ck=$(copy_run micro$v)
  python3 - "$ck/trainer_state.json" "$v" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["sampler"]["micro_index"] = int(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
  rehash "$ck" 2
  expect_exit 65 "$bt" train --config "$tmp/micro$v.yaml"
  expect_in "$err" "trainer_state.json: \"sampler.micro_index\" is $v, expected 0 to step x grad_accum = 2"
done

# --- 5. A file that is a link to one outside the checkpoint: refused, naming it. ---------------
ck=$(copy_run link)
mkdir -p "$tmp/elsewhere"
mv "$ck/optimizer.safetensors" "$tmp/elsewhere/optimizer.safetensors"
ln -s "$tmp/elsewhere/optimizer.safetensors" "$ck/optimizer.safetensors"
expect_exit 65 "$bt" ckpt verify "$ck"
expect_in "$err" "$ck/optimizer.safetensors: is a symbolic link (to $tmp/elsewhere/optimizer.safetensors)"
expect_exit 65 "$bt" train --config "$tmp/link.yaml" --resume "$ck"
expect_in "$err" "$ck/optimizer.safetensors: is a symbolic link"
# A linked transformer/ folder is refused the same way.
ck=$(copy_run linkdir)
mv "$ck/transformer" "$tmp/elsewhere/transformer"
ln -s "$tmp/elsewhere/transformer" "$ck/transformer"
expect_exit 65 "$bt" ckpt verify "$ck"
expect_in "$err" "$ck/transformer: is a symbolic link"
expect_exit 0 "$bt" ckpt verify "$good"
echo "$checks passed, 0 failed"
