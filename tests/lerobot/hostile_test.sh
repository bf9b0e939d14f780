#!/usr/bin/env bash
# import-lerobot against hostile inputs (docs/bad_input.md, "LeRobot import"): latent files that
# would crash or fool a general unpickler, sizes that overflow, folders that overlap or are
# locked, FIFOs and devices, metadata that lies, NaN/Inf values, stale temp files. Each is a named
# error with the README's exit code and no dataset written (no meta/episodes.jsonl).
# Usage: hostile_test.sh BATON_TRAIN SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"
bt=$1
here="$2/tests/lerobot"
py=/usr/bin/python3  # Debian's python3-torch
hostile() { $py "$here/hostile_pth.py" "$@"; }

(cd "$here" && $py make_upstream_dataset.py "$tmp/up") >/dev/null
lat=src/tiny_robotwin/latents/chunk-000
high=$lat/observation.images.cam_high/episode_000000_0_45.pth
left=$lat/observation.images.cam_left_wrist/episode_000000_0_45.pth
n=0
# fresh: a new copy of the inputs in $c and a new output folder $o; imp runs the import (a hang
# is a failure, not a stuck suite).
fresh() {
  n=$((n + 1))
  c="$tmp/c$n"
  o="$tmp/o$n"
  cp -r "$tmp/up" "$c"
}
imp() { timeout 60 "$bt" import-lerobot --src "$c/src" --out "$o" --profile "$c/profile.yaml" "$@"; }
no_dataset() {
  [ ! -e "$o/meta/episodes.jsonl" ] || fail "a refused import left $o/meta/episodes.jsonl"
  checks=$((checks + 1))
}

# --- B1: the .pth reader ---------------------------------------------------------------------
# Opcodes on an empty stack: a named refusal, never SIGSEGV/SIGABRT.
for op in 85 86 87 52 62 81; do
  fresh
  hostile pickle "$c/$high" "8002${op}2e"
  expect_exit 65 imp
  expect_in "$err" "episode_000000_0_45.pth: not a readable torch.save file: pickle byte 2"
  no_dataset
done
# 200k levels of nesting
fresh
hostile nest "$c/$high" 200000
expect_exit 65 imp
expect_in "$err" "stack deeper than 4096"
# A latent whose sizes exceed its storage (it would copy heap bytes into the dataset).
fresh
hostile overrun "$c/$high" 4096
expect_exit 65 imp
expect_in "$err" "reaches element"
no_dataset
# The same for the empty-prompt embedding (meta/empty_text.safetensors).
fresh
hostile shrink "$c/src/empty_emb.pt"
expect_exit 65 imp
expect_in "$err" "empty_emb.pt: not a readable torch.save file"
expect_in "$err" "reaches element 127 of storage '0', which holds 64"
no_dataset
# A one-element list (pickled with APPEND) is read, not refused.
fresh
hostile set "$c/$high" extra "[7]"
expect_exit 0 imp --json
expect_in "$out" '"imported":3'

# --- B2: sizes --------------------------------------------------------------------------------
# F*h*w overflowing int64
fresh
hostile set "$c/$high" latent_num_frames "2**40"
hostile set "$c/$high" latent_height "2**20"
hostile set "$c/$high" latent_width "2**20"
expect_exit 65 imp
expect_in "$err" "episode_000000_0_45.pth: key 'latent': shape [48, 4] is not [F*h*w, C]"
no_dataset
# negative h and w that multiply to the rows and fit the layout (it gave 64 naming the output
# episode file): named in the latent file
fresh
hostile set "$c/$high" latent_height "-4"
hostile set "$c/$high" latent_width "-4"
for cam in "$left" "${left/left_wrist/right_wrist}"; do
  hostile set "$c/$cam" latent_height "-2"
  hostile set "$c/$cam" latent_width "-2"
done
expect_exit 65 imp
expect_in "$err" "episode_000000_0_45.pth: key 'latent_height': -4 (a latent size is >= 1)"
no_dataset
# frame ids far apart (their steps would overflow)
fresh
hostile set "$c/$high" frame_ids "[1, 2**62, -2**62, 41]"
expect_exit 65 imp
expect_in "$err" "frame_ids_out_of_range"
# absurd profile sizes: a config error naming the key, before anything is allocated
fresh
sed -i 's/action_per_frame: 16/action_per_frame: 4000000000/' "$c/profile.yaml"
expect_exit 78 imp
expect_in "$err" "key 'action_per_frame'"
# an earlier run's episode metadata that does not parse (n_video "x"): imported again, with two
# workers, instead of stoll's exception ending the process
fresh
expect_exit 0 imp --workers 2
rm "$o/meta/episodes.jsonl"
first=$(ls "$o/episodes" | head -1)
$py - "$o/episodes/$first" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"]["n_video"] = "x"
h["__metadata__"]["text_len"] = "99999999999999999999999"
s = json.dumps(h).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(s)) + s + b[8 + n:])
PY
expect_exit 0 imp --workers 2 --json
expect_in "$out" '"imported":1,"reused":2'
expect_exit 0 "$bt" data-check --data "$o" --batch-size 1

# --- B3: folders and files --------------------------------------------------------------------
# The output folder is locked: a second import into it while one runs is refused.
fresh
mkdir -p "$o"
exec 9>"$o/.import-lerobot.lock"
flock -n 9 || fail "cannot take the lock for the test"
expect_exit 64 imp
expect_in "$err" "is being written by another import-lerobot"
exec 9>&-
no_dataset
expect_exit 0 imp
# Two real imports of different inputs into one --out at once: never both succeed with a mix.
(cd "$here" && $py make_upstream_dataset.py "$tmp/many" --segments 120 --text-len 64 --text-dim 256) >/dev/null
rc1=0 rc2=0
timeout 120 "$bt" import-lerobot --src "$tmp/many/src" --out "$tmp/both" --profile "$tmp/many/profile.yaml" \
  >/dev/null 2>"$tmp/both1.err" &
p1=$!
for _ in $(seq 100); do [ -e "$tmp/both/.import-lerobot.lock" ] && break; sleep 0.02; done
timeout 60 "$bt" import-lerobot --src "$tmp/up/src" --out "$tmp/both" --profile "$tmp/up/profile.yaml" \
  >/dev/null 2>"$tmp/both2.err" || rc2=$?
wait "$p1" || rc1=$?
echo "two imports at once: exits $rc1 and $rc2"
# One wins; the other is refused (locked, or holding the winner's inputs): never a mix.
case "$rc1 $rc2" in
  "0 64") want=120 ;;
  "64 0") want=3 ;;
  *) fail "two imports into one --out exited $rc1 and $rc2: $(cat "$tmp/both1.err" "$tmp/both2.err")" ;;
esac
[ "$(wc -l <"$tmp/both/meta/episodes.jsonl")" -eq "$want" ] || fail "the dataset mixes two imports"
checks=$((checks + 1))

# --out that is, lies inside or contains a --src: refused, nothing written, the source intact.
fresh
tiny="$c/src/tiny_robotwin"
cp "$tiny/meta/info.json" "$tmp/info.before"
for out_dir in "$tiny" "$c/src" "$c/src/tiny_robotwin/new" "$c"; do
  expect_exit 64 timeout 60 "$bt" import-lerobot --src "$c/src" --out "$out_dir" \
    --profile "$c/profile.yaml" --overwrite
  expect_in "$err" "the import would write into its own input"
done
cmp -s "$tmp/info.before" "$tiny/meta/info.json" || fail "the source's info.json changed"
[ ! -e "$c/src/tiny_robotwin/new" ] || fail "a refused --out was created"
checks=$((checks + 1))

# FIFOs and devices: refused unopened, never a hang or an endless read.
fresh
mkfifo "$tmp/fifo$n"
expect_exit 78 timeout 20 "$bt" import-lerobot --src "$c/src" --out "$o" --profile "$tmp/fifo$n"
expect_in "$err" "it is a FIFO, not a regular file"
expect_exit 65 imp --empty-emb "$tmp/fifo$n"
expect_in "$err" "it is a FIFO, not a regular file"
expect_exit 65 imp --empty-emb /dev/zero
expect_in "$err" "/dev/zero: it is a character device, not a regular file"
rm "$c/$high" && mkfifo "$c/$high"
expect_exit 65 imp
expect_in "$err" "episode_000000_0_45.pth: it is a FIFO, not a regular file"
no_dataset
fresh
rm "$c/src/tiny_robotwin/meta/episodes.jsonl" && mkfifo "$c/src/tiny_robotwin/meta/episodes.jsonl"
expect_exit 65 imp
expect_in "$err" "episodes.jsonl: it is a FIFO, not a regular file"
fresh
rm "$c/src/tiny_robotwin/data/chunk-000/episode_000001.parquet"
ln -s /dev/zero "$c/src/tiny_robotwin/data/chunk-000/episode_000001.parquet"
expect_exit 65 imp
expect_in "$err" "episode_000001.parquet: it is a character device, not a regular file"
no_dataset

# info.json's data_path outside the dataset root
fresh
sed -i 's#"data_path": "data/#"data_path": "../../elsewhere/data/#' "$c/src/tiny_robotwin/meta/info.json"
expect_exit 65 imp
expect_in "$err" "leaves the dataset folder"
# A removed episodes.jsonl line; total_episodes and fps against what is there.
fresh
sed -i '2d' "$c/src/tiny_robotwin/meta/episodes.jsonl"
expect_exit 65 imp
expect_in "$err" "lists 2 episodes"
expect_in "$err" "says total_episodes 3 (a line removed or added?)"
sed -i 's/"total_episodes": 3/"total_episodes": 2/' "$c/src/tiny_robotwin/meta/info.json"
expect_exit 65 imp
expect_in "$err" "episode_index 2 is outside [0, total_episodes 2)"
no_dataset
fresh
sed -i 's/"fps": 20/"fps": 30/' "$c/src/tiny_robotwin/meta/info.json"
expect_exit 65 imp
expect_in "$err" "fps_mismatch: timestamp of row 1 is 0.050000, info.json's fps 30.000000"
no_dataset

# NaN / Inf in latents, text and actions: named at import, with the episode's segment.
fresh
hostile set "$c/$left" latent "d['latent'].index_fill(0, torch.tensor([3]), float('nan'))"
expect_exit 65 imp
expect_in "$err" "cam_left_wrist/episode_000000_0_45.pth: segment src/tiny_robotwin/0_0_45: nonfinite_latent"
expect_exit 0 imp --skip-invalid --json
expect_in "$out" '"nonfinite_latent":1'
fresh
hostile set "$c/$high" text_emb "d['text_emb'].index_fill(0, torch.tensor([0]), float('inf'))"
expect_exit 65 imp
expect_in "$err" "segment src/tiny_robotwin/0_0_45: nonfinite_text"
fresh
(cd "$here" && $py -c "
import numpy as np, sys
from parquet_writer import write_parquet
a = np.zeros((60, 16), np.float32); a[:, 6] = a[:, 14] = 1; a[10, 2] = np.nan
fi = np.arange(60, dtype=np.int64)
write_parquet(sys.argv[1], [('action', a), ('frame_index', fi), ('timestamp', (fi / 20.0).astype(np.float32))])
" "$c/src/tiny_robotwin/data/chunk-000/episode_000001.parquet")
expect_exit 65 imp
expect_in "$err" "episode_000001.parquet: segment src/tiny_robotwin/1_0_60: nonfinite_action: action row 10 column 2"
no_dataset

# Stale temp files of a killed import are removed by the next run.
fresh
expect_exit 0 imp
touch "$o/texts/0123.safetensors.tmp.999999" "$o/episodes/x.safetensors.tmp.12" "$o/meta/info.json.tmp.7"
touch "$o/texts/keep.tmp.notapid"
expect_exit 0 imp
expect_in "$out" "up to date"
[ -z "$(ls "$o"/texts/*.tmp.[0-9]* "$o"/episodes/*.tmp.[0-9]* "$o"/meta/*.tmp.[0-9]* 2>/dev/null)" ] ||
  fail "stale temp files left: $(ls "$o"/*/*.tmp.*)"
[ -e "$o/texts/keep.tmp.notapid" ] || fail "a file that is not a temp file was removed"
checks=$((checks + 1))

echo "hostile_test: $checks checks passed"
