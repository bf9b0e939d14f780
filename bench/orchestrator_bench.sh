#!/usr/bin/env bash
# Issue 5's orchestrator bench, on the SLURM dev cluster with the real trainer.
#
# 1. Preemption -> first training step of the next attempt, split from the events' `time` fields:
#      stop      signal -> checkpoint save begins (the launcher forwards the signal; the trainer
#                finishes the optimizer step in flight)
#      save      checkpoint.seconds
#      exit      checkpoint written -> the launcher's attempt_end (segment_end, srun teardown)
#      requeue   attempt_end -> the job is PENDING again (scontrol requeue, COMPLETING)
#      hold      PENDING -> the next attempt's launcher starts (attempt_start): SLURM's requeue
#                hold (~121 s on 22.05) or, with the shortcut `scontrol update StartTime=now`,
#                just the scheduling; plus the batch script and the resume decision
#      launch    attempt_start -> the trainer begins loading (srun, process start, dataset index,
#                model): segment_start.time - load_seconds - attempt_start.time
#      load      segment_start.load_seconds (checkpoint read and restore)
#      step1     the first optimizer step of the new attempt (its step_time_s)
#    Scenarios: `signal` (scancel --batch --signal=USR1: what SLURM sends at preemption, at a
#    known time), `urgent` (a real preemption by an urgent-partition job that needs every CPU and
#    exits at once; time 0 = its sbatch), `signal` without the shortcut (the full hold); then
#    `preemption -> first step: hold released X s vs kept Y s` and the scenario's ETTR (baton
#    show: where its wall time went, with and without queue time).
# 1b. Crashes and hangs (BENCH_RESTART=1, the default): a crash -> the next first step, restarted
#    inside the allocation vs requeued; and how long a SIGSTOPped rank takes to be declared hung.
# 2. Ingestion: an events file with BENCH_INGEST_STEPS (200000) step records, ingested by
#    `baton show RUN --no-sync` (the same ingest `baton watch` runs): step rows per second, and
#    an incremental pass.
#
# 0. SLURM command runs per sync pass with 1, 32 and 256 live jobs (fake client, no cluster), and
#    a bad node through the node ledger: incidents before its exclusion, attempts lost to it.
#
# usage: bash bench/orchestrator_bench.sh   (after scripts/build.sh; brings the cluster up)
#   BENCH_SIGNAL_CYCLES (3)  BENCH_URGENT_CYCLES (2)  BENCH_NO_SHORTCUT (1: one cycle with the
#   full hold, ~2.5 min; 0 skips it)  BENCH_INGEST_STEPS (200000)  BENCH_MODEL_DIM (64)
#   BENCH_BUILD_DIR (build)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/machine_load.sh
bench_machine_load
src=$(pwd)
build=${BENCH_BUILD_DIR:-build}
baton=$src/$build/orchestrator/baton
bt=$src/$build/trainer/baton-train
[[ -x $baton && -x $bt ]] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
signal_cycles=${BENCH_SIGNAL_CYCLES:-3}
urgent_cycles=${BENCH_URGENT_CYCLES:-2}
no_shortcut=${BENCH_NO_SHORTCUT:-1}
ingest_steps=${BENCH_INGEST_STEPS:-200000}
dim=${BENCH_MODEL_DIM:-64}

TMP=$(mktemp -d /tmp/baton-bench.XXXXXX)
chmod 0755 "$TMP"
export BATON_HOME=$TMP/home
export BATON_TRAIN_BIN=$bt
JOBS=()
cleanup() {
  local j
  for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
die() { echo "bench: error: $*" >&2; exit 1; }
now() { date +%s.%N; }
job_field() { scontrol -o show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }
wait_for() { # wait_for TIMEOUT_S WHAT COMMAND...: polls every 0.1 s
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    ((SECONDS < deadline)) || die "timed out waiting for $what"
    sleep 0.1
  done
}

# ------------------------------------------------------------------ 0. SLURM calls per sync pass
# One batched query per pass, whatever the number of live jobs (the fake client's batch
# interface; BENCH_ONLY_SYNC_CALLS=1 prints only this line, without the cluster).
"$src/$build/bench/baton-bench-sync-calls" || die "the sync calls bench failed"
# A bad node through the node ledger and policy (fake SLURM as the scheduler, no cluster).
"$src/$build/bench/baton-bench-bad-node" || die "the bad node bench failed"
[[ ${BENCH_ONLY_SYNC_CALLS:-0} == 1 ]] && exit 0

# ------------------------------------------------------------------ 1. preemption
bash slurm/dev_cluster.sh up >/dev/null
cpus=$(sinfo -h -p debug -o '%c' | head -n1)
[[ -z $(squeue -h -o %i) ]] || die "the cluster is busy (squeue); the bench needs it idle"
echo "== preemption -> first step of the next attempt (dev cluster: $(sinfo -V), $cpus CPUs, $(scontrol show config | sed -n 's/^AuthInfo *= *//p'))"
"$bt" synth-data --out "$TMP/ds" --episodes 48 --seed 7 --frames 8:24 --height 4 --width 4 >/dev/null
cat >"$TMP/bench.yaml" <<YAML
run: {name: bench, steps: 100000, seed: 1}
data: {path: $TMP/ds, batch_size: 4, pad_multiple: 4, pool_factor: 4}
model: {dim: $dim, heads: 4, layers: 2, ffn_dim: $((4 * dim)), freq_dim: 64}
optim: {lr: 1.0e-3, warmup_steps: 10}
checkpoint: {every: 1000, keep_last: 2}
train: {log_every: 100}
slurm: {partition: debug, cpus_per_task: $cpus, time: "30:00", max_restarts: 100}
YAML
out=$("$baton" submit "$TMP/bench.yaml" --json)
job=$(jq -r .job_id <<<"$out")
run_dir=$(jq -r .run_dir <<<"$out")
JOBS+=("$job")

steps_in() {
  local n
  n=$(grep -c '"type":"step"' "$run_dir/events/$job.$1.jsonl" 2>/dev/null) || true
  echo "${n:-0}"
}
attempt_steps() { (($(steps_in "$1") >= $2)); }
requeued() { [[ $(job_field "$job" JobState) == PENDING && $(job_field "$job" Restarts) == "$1" ]]; }

# cycle KIND SHORTCUT: preempt attempt $restart, wait for the next attempt's first step; appends
# one JSON line of phase durations to $TMP/cycles.jsonl.
restart=0
cycle() {
  local kind=$1 shortcut=$2 t_sig t_pending t_release=null
  wait_for 300 "attempt $restart to train 5 steps" attempt_steps "$restart" 5
  if [[ $kind == urgent ]]; then
    t_sig=$(now)
    JOBS+=("$(sbatch --parsable -p urgent -c "$cpus" -t 1 -J bench-urgent -o /dev/null --wrap true)")
  else
    t_sig=$(now)
    scancel --batch --signal=USR1 "$job"
  fi
  wait_for 120 "job $job to be requeued" requeued $((restart + 1))
  t_pending=$(now)
  if [[ $shortcut == 1 ]]; then
    # 1 s after PENDING, not sooner: slurmd refuses to launch a job whose credential is not newer
    # (in whole seconds) than the revocation of its previous run ("Job credential revoked").
    sleep 1
    scontrol update jobid="$job" StartTime=now
    t_release=$(now)
  fi
  restart=$((restart + 1))
  wait_for 400 "attempt $restart to train its first step" attempt_steps "$restart" 1
  python3 - "$run_dir/events/$job.$((restart - 1)).jsonl" "$run_dir/events/$job.$restart.jsonl" \
    "$kind" "$shortcut" "$t_sig" "$t_pending" "$t_release" >>"$TMP/cycles.jsonl" <<'PY'
import json, sys
old, new, kind, shortcut, t_sig, t_pending, t_release = sys.argv[1:]
def recs(p): return [json.loads(l) for l in open(p) if l.strip()]
a, b = recs(old), recs(new)
ck = [r for r in a if r["type"] == "checkpoint" and r.get("reason") == "signal"][-1]
end = [r for r in a if r["type"] == "attempt_end"][-1]
start = [r for r in b if r["type"] == "attempt_start"][0]
seg = [r for r in b if r["type"] == "segment_start"][0]
step = [r for r in b if r["type"] == "step"][0]
t_sig, t_pending = float(t_sig), float(t_pending)
ck0 = ck["time"] - ck["seconds"]
load0 = seg["time"] - seg["load_seconds"]
print(json.dumps({
    "kind": kind, "shortcut": shortcut == "1", "stopped_at": ck["step"],
    "stop": ck0 - t_sig, "save": ck["seconds"], "exit": end["time"] - ck["time"],
    "requeue": t_pending - end["time"], "hold": start["time"] - t_pending,
    "launch": load0 - start["time"], "load": seg["load_seconds"], "step1": step["step_time_s"],
    "total": step["time"] - t_sig, "ckpt_bytes": ck["bytes"],
    "step_s": sorted(r["step_time_s"] for r in a if r["type"] == "step")[len([r for r in a if r["type"] == "step"]) // 2]}))
PY
  tail -n1 "$TMP/cycles.jsonl" | jq -r '"   \(.kind)\(if .shortcut then "" else " (no shortcut)" end): stop \(.stop*1000|floor) ms, save \(.save*1000|floor) ms, hold \(.hold*10|floor/10) s, total \(.total*10|floor/10) s"'
}
for ((i = 0; i < signal_cycles; i++)); do cycle signal 1; done
for ((i = 0; i < urgent_cycles; i++)); do cycle urgent 1; done
((no_shortcut == 1)) && cycle signal 0
scancel "$job"
sleep 2
# Where the scenario's wall time went (baton show: time_buckets), once the cancel is recorded
# (or as of now, if it is not within a minute).
run_id=$(jq -r .run_id <<<"$out")
for ((i = 0; i < 60; i++)); do
  [[ $("$baton" show "$run_id" --json 2>/dev/null | jq -r .status) =~ ^(CANCELLED|FAILED|COMPLETED)$ ]] && break
  sleep 0.5
done
"$baton" show "$run_id" --json | jq -r '"run \(.status): " + (.time | "ETTR of its scenario: \(.ettr * 1000 | round / 10) % (\(.ettr_without_queue * 1000 | round / 10) % without queue), wall \(.wall_s | round) s: " + ([.buckets | to_entries[] | select(.value >= 0.05) | "\(.key) \(.value * 10 | round / 10) s"] | join(", ")))'

[[ -s $TMP/cycles.jsonl ]] && python3 - "$TMP/cycles.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
phases = ["stop", "save", "exit", "requeue", "hold", "launch", "load", "step1", "total"]
def fmt(x): return f"{x:8.3f}"
print(f"\n{'scenario':<26}{'n':>3}" + "".join(f"{p:>9}" for p in phases) + "   (seconds, median)")
for kind, shortcut, label in [("signal", True, "USR1, StartTime=now"), ("urgent", True, "urgent job, StartTime=now"),
                              ("signal", False, "USR1, full hold")]:
    sel = [r for r in rows if r["kind"] == kind and r["shortcut"] == shortcut]
    if not sel: continue
    print(f"{label:<26}{len(sel):>3}" + "".join(fmt(statistics.median(r[p] for r in sel)) for p in phases))
released = [r["total"] for r in rows if r["kind"] == "signal" and r["shortcut"]]
kept = [r["total"] for r in rows if r["kind"] == "signal" and not r["shortcut"]]
if released and kept:
    print(f"preemption -> first step: hold released {statistics.median(released):.1f} s vs kept "
          f"{statistics.median(kept):.1f} s (USR1, median; released = scontrol update StartTime=now, "
          "what baton watch does after a clean stop)")
print(f"checkpoint size {rows[0]['ckpt_bytes'] / 1e6:.2f} MB (weights + AdamW state); median optimizer step "
      f"{statistics.median(r['step_s'] for r in rows):.3f} s (stop = signal latency + the step in flight, or two "
      "when the signal lands after that step's all-reduce)")
PY

# ------------------------------------------------------------------ 1b. crashes and hangs
# A crash restarted inside the allocation vs one requeued (the test hook BATON_TEST_CRASH_AT_STEP
# kills the rank as step index 25 starts, checkpoint at 20): last step before the crash -> first
# step after it. The requeue's SLURM hold (~121 s) is cut with `scontrol update StartTime=now`
# 1 s after PENDING, as above. Then a SIGSTOPped rank: SIGSTOP -> the launcher's hang_detected_at.
if [[ ${BENCH_RESTART:-1} == 1 ]]; then
  echo
  echo "== crashes and hangs inside the allocation"
  restart_cfg() { # restart_cfg FILE IN_JOB_RESTARTS
    sed -e 's/steps: 100000/steps: 40/' -e 's/every: 1000/every: 10/' \
      -e "s/max_restarts: 100}/max_restarts: 100, max_failures: 5, in_job_restarts: $2}/" \
      -e 's/train: {log_every: 100}/train: {log_every: 100, hang_min_s: 5, first_step_timeout_s: 60}/' \
      "$TMP/bench.yaml" >"$1"
  }
  step_times() { # step_times FILE: the event times of its step records
    grep -h '"type":"step"' "$1" 2>/dev/null | jq -r .time
  }
  has_step() { [[ -n $(step_times "$1" | head -n1) ]]; }
  restart_cfg "$TMP/injob.yaml" 1
  out=$(BATON_TEST_CRASH_AT_STEP=25 "$baton" submit "$TMP/injob.yaml" --json)
  job=$(jq -r .job_id <<<"$out") run_dir=$(jq -r .run_dir <<<"$out")
  JOBS+=("$job")
  wait_for 300 "the in-job restart's first step" has_step "$run_dir/events/$job.0.1.jsonl"
  inj=$(python3 -c "print(float('$(step_times "$run_dir/events/$job.0.1.jsonl" | head -n1)') - float('$(step_times "$run_dir/events/$job.0.jsonl" | tail -n1)'))")
  scancel "$job"
  restart_cfg "$TMP/requeue.yaml" 0
  out=$(BATON_TEST_CRASH_AT_STEP=25 "$baton" submit "$TMP/requeue.yaml" --json)
  job=$(jq -r .job_id <<<"$out") run_dir=$(jq -r .run_dir <<<"$out")
  JOBS+=("$job")
  wait_for 300 "job $job to be requeued" requeued 1
  sleep 1
  scontrol update jobid="$job" StartTime=now
  wait_for 300 "the requeued attempt's first step" has_step "$run_dir/events/$job.1.jsonl"
  req=$(python3 -c "print(float('$(step_times "$run_dir/events/$job.1.jsonl" | head -n1)') - float('$(step_times "$run_dir/events/$job.0.jsonl" | tail -n1)'))")
  scancel "$job"
  printf 'crash -> first step: in-allocation restart %.1f s vs requeue %.1f s (hold cut with StartTime=now; SLURM'"'"'s own hold adds ~121 s)\n' "$inj" "$req"

  restart_cfg "$TMP/hang.yaml" 1
  # No checkpoint near the stop: a rank stopped inside a save is judged by the save's own
  # budget (at least 60 s), not by the step budget this line measures.
  sed -i 's/steps: 40/steps: 100000/; s/every: 10,/every: 100000,/' "$TMP/hang.yaml"
  out=$("$baton" submit "$TMP/hang.yaml" --json)
  job=$(jq -r .job_id <<<"$out") run_dir=$(jq -r .run_dir <<<"$out")
  JOBS+=("$job")
  wait_for 300 "attempt 0 to train 20 steps" attempt_steps 0 20
  pid=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$run_dir/heartbeat/rank-00000")
  t_stop=$(now)
  kill -STOP "$pid"
  wait_for 120 "the hang to be declared" grep -q '"hang_detected_at"' "$run_dir/events/$job.0.jsonl"
  detected=$(grep -h '"type":"attempt_end"' "$run_dir/events/$job.0.jsonl" | jq -r .hang_detected_at)
  p99=$(grep -h '"type":"step"' "$run_dir/events/$job.0.jsonl" | jq -s 'map(.step_time_s) | sort | .[((length * 0.99) | ceil) - 1]')
  scancel "$job"
  printf 'detection time of a stopped rank: %.1f s (limit max(train.hang_min_s 5, 5 x p99 step %.2f s) = %.1f s, then up to 1 s to the next poll)\n' \
    "$(python3 -c "print($detected - $t_stop)")" "$p99" "$(python3 -c "print(max(5, 5 * $p99))")"
fi

# ------------------------------------------------------------------ 2. ingestion
echo
echo "== ingestion: $ingest_steps step records through baton's ingest (baton show --no-sync)"
mkdir -p "$TMP/stub"
printf '#!/bin/sh\necho 999999\n' >"$TMP/stub/sbatch"
chmod +x "$TMP/stub/sbatch"
out=$(PATH=$TMP/stub:$PATH "$baton" submit "$TMP/bench.yaml" --name ingest --json)
irun=$(jq -r .run_id <<<"$out")
idir=$(jq -r .run_dir <<<"$out")
gen() { # gen FILE FIRST COUNT [start]: step records shaped like the trainer's
  python3 - "$@" <<'PY'
import json, sys
path, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = 1.8e9 + first
with open(path, "a") as f:
    if len(sys.argv) > 4:
        f.write(json.dumps({"type": "attempt_start", "time": t, "source": "launcher", "job_id": "999999",
            "restart_count": 0, "nodes": "n1", "checkpoint": None, "mode": "fresh", "step0": 0,
            "resume_warmup_steps": 0, "skipped_checkpoints": []}, sort_keys=True) + "\n")
    for s in range(first, first + count):
        t += 0.5
        f.write(json.dumps({"type": "step", "time": t, "source": "trainer", "step": s,
            "lr": 1e-3, "loss": 2.0 / (1 + s * 1e-4), "loss_video": 1.1, "loss_action": 0.9,
            "grad_norm": 1.2345678, "tokens": 40960, "padded_tokens": 2048, "samples": 16,
            "valid_frames": 960, "padded_frames": 48, "step_time_s": 0.5, "tokens_per_s": 81920.5,
            "in_warmup": s < 200, "epoch": s // 1000}, sort_keys=True) + "\n")
PY
}
ev=$idir/events/999999.0.jsonl
gen "$ev" 0 "$ingest_steps" start
size=$(stat -c %s "$ev")
t0=$(now)
"$baton" show "$irun" --no-sync --json >"$TMP/show.json"
t1=$(now)
rows=$(jq .steps "$TMP/show.json")
[[ $rows == "$ingest_steps" ]] || die "ingested $rows step rows, expected $ingest_steps"
t2=$(now)
"$baton" show "$irun" --no-sync --json >/dev/null
t3=$(now)
gen "$ev" "$ingest_steps" 10000
t4=$(now)
"$baton" show "$irun" --no-sync --json >"$TMP/show.json"
t5=$(now)
[[ $(jq .steps "$TMP/show.json") == $((ingest_steps + 10000)) ]] || die "incremental ingest lost rows"
python3 - "$ingest_steps" "$size" "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" <<'PY'
import sys
n, size = int(sys.argv[1]), int(sys.argv[2])
t0, t1, t2, t3, t4, t5 = map(float, sys.argv[3:])
print(f"first pass:  {n} step rows ({size / 1e6:.1f} MB) in {t1 - t0:.2f} s = {n / (t1 - t0):,.0f} step rows/s "
      f"({size / 1e6 / (t1 - t0):.1f} MB/s), including process start and the query")
print(f"no new data: {t3 - t2:.3f} s (byte cursor at the end)")
print(f"10000 more:  {t5 - t4:.3f} s = {10000 / (t5 - t4):,.0f} step rows/s incremental")
PY
