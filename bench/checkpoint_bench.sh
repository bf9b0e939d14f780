#!/usr/bin/env bash
# Checkpoint benchmark: one run, side by side, each figure on its own line.
#   disk: this folder's fsync'd sequential write rate (dd 1 GiB, conv=fsync)
#   save: a sync save of a model with ~1 GB of state (fp32 weights + AdamW), vs the disk
#   load warm / cold: verify + read into the model (segment_start's load_seconds of an explicit
#     --resume, which reads the checkpoint only once) vs `cat` of the same files, with the page
#     cache warm, then with the files evicted (drop_caches when writable, else each file's pages
#     dropped with posix_fadvise DONTNEED through dd iflag=nocache; said which)
#   bytes per rank W=2 / W=4: largest / mean bytes one rank writes in a save (Gloo on the CPU,
#     bf16 export, so master weights, transformer/ and AdamW are all split), optim.shard and
#     replicated
#   signal -> exit: the time from SIGUSR1 to exit 75; then, on a run whose step takes >= 10 s,
#     the abandon of the step in flight (signal -> abandoned) beside one block's forward +
#     backward, and the save (bench/abandon_bench.sh)
#   projection lingbot_va_5b_8x80 W=8: the real model's largest per-rank checkpoint bytes
#     (plan-memory) and its stop save at this disk's rate
#   async stall: the training thread's stall per periodic save with checkpoint.async (snapshot +
#     commit) vs the sync save of the same bytes, two runs of the same model side by side; and the
#     median step time while a background write runs vs the sync run's median step
# usage: bench/checkpoint_bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
bt=${1:-build}/trainer/baton-train
[ -x "$bt" ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d -p "${BATON_BENCH_DIR:-/var/tmp}")
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }

t0=$(now)
dd if=/dev/zero of="$work/dd.bin" bs=64M count=16 conv=fsync status=none
t1=$(now)
rm -f "$work/dd.bin"
disk_s=$(python3 -c "print($t1 - $t0)")

"$bt" synth-data --out "$work/ds" --episodes 8 --seed 0 --frames 4:6 --height 4 --width 4 >/dev/null
# ~85M parameters: 4 B weights + 8 B AdamW moments each = ~1 GB of state.
cat >"$work/cfg.yaml" <<YAML
run: {name: ckpt-bench, dir: $work/run, steps: 2, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 1}
model: {dim: 1024, heads: 16, layers: 5, ffn_dim: 4096, freq_dim: 256}
optim: {lr: 1.0e-4, warmup_steps: 0}
checkpoint: {every: 1, keep_last: 1, async: false}
train: {log_every: 1}
YAML
"$bt" train --config "$work/cfg.yaml" >"$work/train.log" 2>&1
ck=$work/run/checkpoints/checkpoint_step_2
files=$(find "$ck" -type f | sort)
ck_bytes=$(du -sb "$ck" | cut -f1)

# evict: every checkpoint file out of the page cache; prints how.
evict() {
  sync
  if { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    echo "drop_caches"
  else
    for f in $files; do dd if="$f" iflag=nocache count=0 status=none; done
    echo "posix_fadvise DONTNEED per file (drop_caches not writable)"
  fi
}
# load: an exact resume from the checkpoint that stops at once (target reached); its load_seconds.
load() {
  "$bt" train --config "$work/cfg.yaml" --resume "$ck" >>"$work/train.log" 2>&1
  grep '"type":"segment_start"' "$work/run/events/local.0.jsonl" | tail -1 |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["load_seconds"])'
}
cat_s() { local a b; a=$(now); cat $files >/dev/null; b=$(now); python3 -c "print($b - $a)"; }

cat $files >/dev/null
warm_load=$(load)
warm_cat=$(cat_s)
how=$(evict)
cold_load=$(load)
evict >/dev/null
cold_cat=$(cat_s)

# Bytes per rank: a smaller model on 2 and 4 ranks, bf16 export; many small parameters (the
# largest is 2 % of the whole, about 1 % in the 5B model), as ownership is by whole parameter.
cat >"$work/small.yaml" <<YAML
run: {name: ckpt-ranks, dir: RUNDIR, steps: 1, seed: 0}
data: {path: $work/ds, batch_size: 1, pad_multiple: 1}
model: {dim: 384, heads: 8, layers: 12, ffn_dim: 1536, freq_dim: 256}
optim: {lr: 1.0e-4, warmup_steps: 0, shard: SHARD}
checkpoint: {every: 1, keep_last: 1, export_dtype: bf16}
train: {log_every: 1}
YAML
ranks_line() {  # WORLD SHARD -> "bytes per rank: a b ..." from rank 0's output
  local w=$1 shard=$2 d=$work/r$1$2 r pids=()
  sed "s#RUNDIR#$d#; s#SHARD#$shard#" "$work/small.yaml" >"$d.yaml"
  for ((r = 0; r < w; r++)); do
    RANK=$r WORLD_SIZE=$w BATON_RDZV_FILE=$work/rdzv.$w$shard "$bt" train --config "$d.yaml" \
      >"$d.log.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  grep -o 'bytes per rank: [0-9 ]*' "$d.log.0" | tail -1
}
r2s=$(ranks_line 2 optimizer); r2r=$(ranks_line 2 none)
r4s=$(ranks_line 4 optimizer); r4r=$(ranks_line 4 none)

# Async vs sync periodic saves of the same model: 8 steps, a save every 2 (steps 2, 4, 6 periodic).
for mode in true false; do
  sed -e "s#dir: $work/run#dir: $work/as$mode#; s/steps: 2,/steps: 8,/" \
    -e "s/every: 1, keep_last: 1, async: false/every: 2, keep_last: 1, async: $mode/" \
    "$work/cfg.yaml" >"$work/as$mode.yaml"
  "$bt" train --config "$work/as$mode.yaml" >"$work/as$mode.log" 2>&1
done

# Stop signal to exit.
sed -i 's/steps: 2,/steps: 1000,/' "$work/cfg.yaml"
"$bt" train --config "$work/cfg.yaml" >>"$work/train.log" 2>&1 &
pid=$!
ev=$work/run/events/local.0.jsonl
n0=$(grep -c '"type":"step"' "$ev" || true)
for _ in $(seq 1200); do [ "$(grep -c '"type":"step"' "$ev" || true)" -ge $((n0 + 3)) ] && break; sleep 0.1; done
s0=$(now)
kill -USR1 $pid
rc=0; wait $pid || rc=$?
s1=$(now)

python3 - "$ev" "$disk_s" "$warm_load" "$warm_cat" "$cold_load" "$cold_cat" "$how" "$s0" "$s1" "$rc" \
  "$r2s" "$r2r" "$r4s" "$r4r" "$ck_bytes" "$work" <<'PY'
import json, re, sys
a = sys.argv
ev = a[1]
disk_s, warm_load, warm_cat, cold_load, cold_cat = map(float, a[2:7])
how, s0, s1, rc = a[7], float(a[8]), float(a[9]), int(a[10])
r2s, r2r, r4s, r4r = a[11:15]
ck_bytes = int(a[15])
rows = [json.loads(l) for l in open(ev)]
disk = (16 * 64 * 2**20) / 1e9 / disk_s
saves = [r for r in rows if r["type"] == "checkpoint" and r["reason"] != "signal"]
save = saves[1] if len(saves) > 1 else saves[0]
gb = save["bytes"] / 1e9
print(f"state: {gb:.2f} GB per checkpoint (weights + AdamW + trainer state)")
print(f"disk: {disk:.2f} GB/s (dd 1 GiB, conv=fsync)")
print(f"save: {save['seconds']:.2f} s = {gb / save['seconds']:.2f} GB/s = {gb / save['seconds'] / disk:.2f} x the disk")
g = ck_bytes / 1e9
print(f"load warm: {warm_load:.2f} s = {g / warm_load:.2f} GB/s = {warm_cat / warm_load:.2f} x cat (cat {warm_cat:.2f} s)")
print(f"load cold: {cold_load:.2f} s = {g / cold_load:.2f} GB/s = {cold_cat / cold_load:.2f} x cat (cat {cold_cat:.2f} s; evicted by {how})")
def ratio(line):
    b = [int(x) for x in line.split(":")[1].split()]
    return max(b) / (sum(b) / len(b))
print(f"bytes per rank W=2: largest/mean = {ratio(r2s):.3f} (optim.shard), {ratio(r2r):.3f} (replicated)")
print(f"bytes per rank W=4: largest/mean = {ratio(r4s):.3f} (optim.shard), {ratio(r4r):.3f} (replicated)")
steps = [r for r in rows if r["type"] == "step"]
sig = [r for r in rows if r["type"] == "checkpoint" and r["reason"] == "signal"]
step_s = sorted(r["step_time_s"] for r in steps)[len(steps) // 2]
work = a[16]
def events(mode):
    return [json.loads(l) for l in open(f"{work}/as{mode}/events/local.0.jsonl")]
sync_saves = [r["seconds"] for r in events("false") if r["type"] == "checkpoint" and r["reason"] == "periodic"]
stalls, overlapped = [], set()
for line in open(f"{work}/astrue.log"):
    m = re.search(r"checkpoint_step_(\d+): .*\(periodic\), async: training stalled ([0-9.]+) s .*waited ([0-9.]+) s .*committed after step (\d+)", line)
    if m:
        stalls.append(float(m.group(2)) + float(m.group(3)))
        overlapped.update(range(int(m.group(1)), int(m.group(4))))
med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
stall, sync_s = sum(stalls) / max(len(stalls), 1), sum(sync_saves) / max(len(sync_saves), 1)
during = [r["step_time_s"] for r in events("true") if r["type"] == "step" and r["step"] in overlapped]
plain = [r["step_time_s"] for r in events("false") if r["type"] == "step"]
print(f"async stall: {stall:.3f} s = {stall / sync_s:.3f} x the sync save ({sync_s:.2f} s; "
      f"{len(stalls)} async saves, snapshot + commit + any wait for the previous write)")
print(f"async step time during the background write: {med(during):.2f} s vs {med(plain):.2f} s "
      f"without ({len(during)} steps overlapped)")
print(f"signal -> exit: {s1 - s0:.2f} s (exit {rc}; median step {step_s:.2f} s, signal save "
      f"{sig[-1]['seconds'] if sig else float('nan'):.2f} s)")
PY

# The real model's stop save, projected from the plan at this disk's rate: the largest rank's
# checkpoint bytes (what `baton submit` weighs against the preemption grace).
"$bt" plan-memory --config configs/lingbot_va_5b_8x80.yaml --world-size 8 --frames 36 --height 24 \
  --width 20 --action-steps 16 --text-len 512 --channels 48 --action-dim 30 --text-dim 4096 \
  --json > "$work/plan_5b.json"
python3 - "$work/plan_5b.json" "$disk_s" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["checkpoint"]
disk = (16 * 64 * 2**20) / 1e9 / float(sys.argv[2])
gb = c["bytes_per_rank_max"] / 1e9
print(f"projection lingbot_va_5b_8x80 W=8: {gb:.2f} GB per rank ({c['bytes_total'] / 1e9:.1f} GB in all), "
      f"stop save {gb / disk:.1f} s at {disk:.2f} GB/s")
PY
# Stop latency on long steps: the step in flight is abandoned, not finished.
bash bench/abandon_bench.sh "${1:-build}"
