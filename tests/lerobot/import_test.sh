#!/usr/bin/env bash
# LeRobot import end to end: the parquet reader against LeRobot's own statistics (a real
# pyarrow-written dataset and generated files covering every codec, page version and encoding
# the reader claims), then `import-lerobot` on a tiny upstream-style dataset checked against a
# transcription of upstream's per-sample transform, its idempotence and resume, and the named
# errors. Usage: import_test.sh BATON_TRAIN SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"
bt=$1
src_dir=$2
here="$src_dir/tests/lerobot"
py=/usr/bin/python3  # Debian's python3-torch and python3-scipy

# 1. lerobot-stats on the real fixture matches meta/episodes_stats.jsonl.
g1="$src_dir/tests/data/lerobot_g1_v21"
for ep in 0 1 2; do "$bt" lerobot-stats "$g1" --episode "$ep" --json; done >"$tmp/g1_stats.jsonl"
expect_in "$($py "$here/stats_check.py" "$g1/meta/episodes_stats.jsonl" <"$tmp/g1_stats.jsonl")" "stats match"

# 2. A tiny upstream-style dataset: SNAPPY + dictionary + v1, ZSTD + v2, UNCOMPRESSED + PLAIN.
(cd "$here" && $py make_upstream_dataset.py "$tmp/up") >/dev/null
tiny="$tmp/up/src/tiny_robotwin"
for ep in 0 1 2; do "$bt" lerobot-stats "$tiny" --episode "$ep" --json; done >"$tmp/tiny_stats.jsonl"
expect_in "$($py "$here/stats_check.py" "$tiny/meta/episodes_stats.jsonl" <"$tmp/tiny_stats.jsonl")" "stats match"

# Outside the reader's scope: named, not guessed at.
mkdir -p "$tmp/gz/meta" "$tmp/gz/data/chunk-000"
cp "$tiny/meta/info.json" "$tiny/meta/episodes.jsonl" "$tiny/meta/tasks.jsonl" "$tmp/gz/meta/"
(cd "$here" && $py -c "
import numpy as np, sys
from parquet_writer import write_parquet
write_parquet(sys.argv[1], [('index', np.full(100, 2**60, np.int64))], codec='GZIP')
" "$tmp/gz/data/chunk-000/episode_000000.parquet")
expect_exit 65 "$bt" lerobot-stats "$tmp/gz" --episode 0
expect_in "$err" "episode_000000.parquet: column 'index': dictionary page: INT64 value 1152921504606846976 beyond 2^53"

# 3. The import equals upstream's transform; the missing camera is a counted skip.
imp=(import-lerobot --src "$tmp/up/src" --out "$tmp/ds" --profile "$tmp/up/profile.yaml" --workers 2 --json)
expect_exit 0 "$bt" "${imp[@]}"
echo "$out" >"$tmp/report.json"
expect_in "$out" '"imported":3'
expect_in "$out" '"missing_camera":1'
expect_in "$out" '"distinct_texts":2'
expect_in "$($py "$here/check_import.py" "$tmp/up/expected" "$tmp/ds" "$tmp/report.json")" "import matches"
expect_exit 0 "$bt" data-check --data "$tmp/ds" --batch-size 1

# 4. Idempotent: a rerun writes nothing.
before=$(find "$tmp/ds" -type f -printf '%p %T@\n' | sort)
expect_exit 0 "$bt" "${imp[@]}"
expect_in "$out" '"up_to_date":true'
[ "$before" = "$(find "$tmp/ds" -type f -printf '%p %T@\n' | sort)" ] || fail "a rerun changed files"

# 5. Resumable: after a kill there is no index; finished episodes are kept, a torn one redone.
rm "$tmp/ds/meta/episodes.jsonl"
first=$(ls "$tmp/ds/episodes" | head -1)
head -c 100 "$tmp/ds/episodes/$first" >"$tmp/torn" && mv "$tmp/torn" "$tmp/ds/episodes/$first"
expect_exit 0 "$bt" "${imp[@]}"
expect_in "$out" '"imported":1'
expect_in "$out" '"reused":2'
echo "$out" >"$tmp/report.json"
expect_in "$($py "$here/check_import.py" "$tmp/up/expected" "$tmp/ds" "$tmp/report.json")" "import matches"

# A real kill -9 at a random point of a longer import: there is either no index or a complete
# one, and the rerun ends with the same dataset as an uninterrupted import.
(cd "$here" && $py make_upstream_dataset.py "$tmp/many" --segments 120 --text-len 64 --text-dim 256) >/dev/null
many=(import-lerobot --src "$tmp/many/src" --profile "$tmp/many/profile.yaml" --json)
"$bt" "${many[@]}" --out "$tmp/many_clean" >/dev/null
"$bt" "${many[@]}" --out "$tmp/many_killed" >/dev/null 2>&1 &
pid=$!
sleep "$((RANDOM % 2)).$((RANDOM % 9 + 1))"
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
if [ -e "$tmp/many_killed/meta/episodes.jsonl" ]; then
  cmp -s "$tmp/many_clean/meta/episodes.jsonl" "$tmp/many_killed/meta/episodes.jsonl" ||
    fail "the killed import left an index that differs from a complete one"
fi
expect_exit 0 "$bt" "${many[@]}" --out "$tmp/many_killed"
echo "after the kill: $out"
for f in meta/episodes.jsonl meta/info.json meta/empty_text.safetensors $(cd "$tmp/many_clean" && ls episodes/* texts/*); do
  cmp -s "$tmp/many_clean/$f" "$tmp/many_killed/$f" || fail "$f differs after a killed and resumed import"
done
checks=$((checks + 1))
echo "ok: a killed then resumed import equals an uninterrupted one"

# 6. Named errors.
cp -r "$tmp/up" "$tmp/bad"
bad="$tmp/bad/src/tiny_robotwin"
badimp=(import-lerobot --src "$tmp/bad/src" --out "$tmp/bad_out" --profile "$tmp/up/profile.yaml")
head -c 300 "$tiny/data/chunk-000/episode_000001.parquet" >"$bad/data/chunk-000/episode_000001.parquet"
expect_exit 65 "$bt" "${badimp[@]}"
expect_in "$err" "episode_000001.parquet"
cp "$tiny/data/chunk-000/episode_000001.parquet" "$bad/data/chunk-000/"
pth="$bad/latents/chunk-000/observation.images.cam_left_wrist/episode_000000_0_45.pth"
echo "not a zip" >"$pth"
expect_exit 65 "$bt" "${badimp[@]}"
expect_in "$err" "episode_000000_0_45.pth"
cp "$tiny/latents/chunk-000/observation.images.cam_left_wrist/episode_000000_0_45.pth" "$pth"
# frame_ids with a non-constant stride
$py - "$bad/latents/chunk-000/observation.images.cam_high/episode_000001_0_60.pth" <<'PY'
import sys, torch
d = torch.load(sys.argv[1]); d["frame_ids"] = torch.tensor([0, 4, 8, 13, 16]); torch.save(d, sys.argv[1])
PY
expect_exit 65 "$bt" "${badimp[@]}"
expect_in "$err" "stride_not_constant"
expect_exit 0 "$bt" "${badimp[@]}" --skip-invalid --json
expect_in "$out" '"stride_not_constant":1'
# episode 0's two segments were written by the failed runs before they stopped: kept, not redone
expect_in "$out" '"imported":0,"reused":2,"skipped":2'
# an episode whose length disagrees with its parquet
sed -i 's/"length": 100/"length": 101/' "$bad/meta/episodes.jsonl"
expect_exit 65 "$bt" "${badimp[@]}" --overwrite
expect_in "$err" "length_mismatch"
# LeRobot v3.0
mkdir -p "$tmp/v3/meta" && echo '{"codebase_version": "v3.0"}' >"$tmp/v3/meta/info.json"
expect_exit 65 "$bt" import-lerobot --src "$tmp/v3" --out "$tmp/v3_out" --profile "$tmp/up/profile.yaml"
expect_in "$err" "v3.0 is not supported yet"
# a bad profile is a config error
sed 's/action_per_frame: 16/action_per_frame: 6/' "$tmp/up/profile.yaml" >"$tmp/bad_profile.yaml"
expect_exit 78 "$bt" import-lerobot --src "$tmp/up/src" --out "$tmp/x" --profile "$tmp/bad_profile.yaml"
expect_in "$err" "action_per_frame"
# the shipped profiles load (the missing --src is what fails, not the profile)
for prof in robotwin libero demo; do
  expect_exit 65 "$bt" import-lerobot --src "$tmp/none" --out "$tmp/x" --profile "$src_dir/configs/import/$prof.yaml"
  expect_in "$err" "no such folder"
done
# a LeRobot folder given where a baton dataset belongs
expect_exit 65 "$bt" data-check --data "$tiny" --batch-size 1
expect_in "$err" "a LeRobot dataset (codebase_version v2.1): import it first with baton-train import-lerobot"
{
  echo "run: {name: t, dir: $tmp/run, steps: 2, seed: 1}"
  echo "data: {path: $g1, batch_size: 4}"
  echo "model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}"
} >"$tmp/lerobot_as_data.yaml"
expect_exit 65 "$bt" train --config "$tmp/lerobot_as_data.yaml"
expect_in "$err" "import it first with baton-train import-lerobot"

echo "import_test: $checks checks passed"
