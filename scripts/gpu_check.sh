#!/usr/bin/env bash
# The GPU check: builds baton-train against a CUDA libtorch (the GPU machine's Python torch) and
# proves it there, in one run that fits a 10-minute slot, writing report.md, results.jsonl and
# logs.tar.gz into one folder. docs/gpu_check.md says what each check shows and how to run it.
#
#   bash scripts/gpu_check.sh [--out DIR]          on the GPU machine (default DIR: $OUT, else
#                                                  gpu-check-out/); needs .gpu-deps/ (below)
#   bash scripts/gpu_check.sh --dry-run [--bin-dir build]
#                                                  here, on the CPU: every step, small sizes;
#                                                  --bin-dir reuses built binaries
#   bash scripts/trainer_deps_prefix.sh .gpu-deps  here, before a GPU run: the trainer's own
#                                                  libraries, carried along with the checkout
#
# Options: --only a,b,c (run only these checks; `build` is implied unless --bin-dir),
# --budget SECONDS (default 560 on a GPU, 1800 dry: a check that would not finish in what is left
# is recorded as skipped), --peak-tflops P (the GPU's bf16 matmul peak for MFU, default 790),
# --build-dir DIR (default build-cuda, build-gpucheck when dry), --keep (keep the work folder).
# Exit 0 when every check that ran passed, 1 when one failed, 2 on a usage error.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry=0 out="" bin_dir="" only="" budget="" peak=790 build_dir="" keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1 ;;
    --out) out=$2; shift ;;
    --bin-dir) bin_dir=$2; shift ;;
    --only) only=$2; shift ;;
    --budget) budget=$2; shift ;;
    --peak-tflops) peak=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-${OUT:-$root/gpu-check-out}}
budget=${budget:-$([ $dry = 1 ] && echo 1800 || echo 560)}
build_dir=${build_dir:-$root/$([ $dry = 1 ] && echo build-gpucheck || echo build-cuda)}
device=$([ $dry = 1 ] && echo cpu || echo cuda)
py=${PYTHON:-python3}
results_py="$root/scripts/gpu_check/results.py"

mkdir -p "$out" || { echo "gpu_check.sh: cannot create $out" >&2; exit 2; }
rm -f "$out/results.jsonl" "$out/report.md" "$out/logs.tar.gz" "$out/meta.json"
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-gpu-check.XXXXXX")
[ $keep = 1 ] || trap 'rm -rf "$work"' EXIT
# The logs live in the work folder and travel as one archive, refreshed after every check: the
# output folder stays at four files, however many commands ran.
logs=$work/logs
mkdir -p "$logs"
start=$(date +%s)
deadline=$((start + budget))
failed=0

left() { echo $((deadline - $(date +%s))); }
selected() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

# record CHECK STATUS SECONDS FIGURES_JSON [NOTE]: one line in results.jsonl, report re-rendered
# (a run cut off by its time limit still leaves the report of what finished).
record() {
  "$py" "$results_py" record "$out/results.jsonl" --check "$1" --status "$2" --seconds "$3" \
    --figures "$4" --note "${5:-}"
  [ "$2" = fail ] || [ "$2" = error ] && failed=1
  "$py" "$results_py" report "$out/results.jsonl" "$out/meta.json" >"$out/report.md.tmp" &&
    mv "$out/report.md.tmp" "$out/report.md"
  archive_logs
  printf '%-34s %-7s %5ss  %s\n' "$1" "$2" "$3" "$(echo "$4" | cut -c1-110)"
}

archive_logs() {
  cp "$out/meta.json" "$logs/" 2>/dev/null
  tar -czf "$out/logs.tar.gz.tmp" -C "$work" logs 2>/dev/null && mv "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}

# run LOG TIMEOUT CMD...: the command's output appended to LOG; its exit code returned.
run() {
  local log=$1 t=$2; shift 2
  echo "+ $*" >>"$log"
  timeout -k 10 "$t" "$@" >>"$log" 2>&1
}

# check NAME NEED_SECONDS FUNCTION: runs FUNCTION unless it is not selected or would not fit.
check() {
  local name=$1 need=$2 fn=$3
  selected "$name" || return 0
  if [ "$(left)" -lt "$need" ]; then
    record "$name" skipped 0 '{}' "not started: $(left) s of the budget left, it needs about $need s"
    return 0
  fi
  local t0=$(date +%s)
  CHECK_LOG="$logs/$name.log"
  CHECK_T0=$t0
  "$fn"
}
elapsed() { echo $(($(date +%s) - CHECK_T0)); }

# ---- sizes: the issue's real width on a GPU, a small model with the same steps dry -------------
if [ $dry = 1 ]; then
  W_DIM=64 W_HEADS=2 W_FFN=128 W_LAYERS=2 W_FREQ=32 W_CH=4 W_ADIM=6 W_TLEN=8 W_TDIM=32
  W_ROWS="12 20"           # frames per episode; 4 episodes a row of 40 tokens a frame
  W_CKPT="none blocks"
  ATT_TOKENS="1024 4096" ATT_HEADS=2 ATT_HD=32 ATT_DTYPE=float32
  R_DIM=32 R_HEADS=2 R_LAYERS=2 R_FFN=64
  GEMM=512
else
  W_DIM=3072 W_HEADS=24 W_FFN=14336 W_LAYERS=4 W_FREQ=256 W_CH=48 W_ADIM=30 W_TLEN=512 W_TDIM=4096
  W_ROWS="150 250"         # 24,000 and 40,000 tokens a row
  W_CKPT="none blocks"
  ATT_TOKENS="16384 65536" ATT_HEADS=24 ATT_HD=128 ATT_DTYPE=bfloat16
  R_DIM=256 R_HEADS=4 R_LAYERS=2 R_FFN=512
  GEMM=8192
fi

# ---- the machine --------------------------------------------------------------------------------
meta() {
  local gpu="" torch_v="" nvcc_v="" cmake_v="" cc_v=""
  command -v nvidia-smi >/dev/null && gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)
  torch_v=$("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>/dev/null)
  command -v nvcc >/dev/null && nvcc_v=$(nvcc --version | tail -2 | head -1)
  cmake_v=$(cmake --version 2>/dev/null | head -1)
  cc_v=$(c++ --version 2>/dev/null | head -1)
  "$py" - "$out/meta.json" <<PY
import json, sys
json.dump({"dry_run": $dry == 1, "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
           "commit": "$(git -C "$root" rev-parse --short HEAD 2>/dev/null)",
           "machine": "$(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)",
           "gpu": """$gpu""", "torch": """$torch_v""", "nvcc": """$nvcc_v""",
           "cmake": """$cmake_v""", "compiler": """$cc_v"""}, open(sys.argv[1], "w"), indent=1)
PY
}
meta
echo "baton GPU check ($([ $dry = 1 ] && echo dry run, CPU || echo GPU)), budget ${budget}s, output in $out"

# ---- build --------------------------------------------------------------------------------------
do_build() {
  local log=$CHECK_LOG torch_prefix deps="$root/.gpu-deps" args=()
  if [ $dry = 1 ]; then
    torch_prefix=""   # Debian's libtorch, in the system prefix
    args+=(-DBATON_CUDA=OFF)
  else
    torch_prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>>"$log")
    if [ -z "$torch_prefix" ]; then
      record build error "$(elapsed)" '{}' "python3 cannot import torch: no CUDA libtorch to build against"
      return 1
    fi
    # Hopper (sm_90); torch's CMake config reads TORCH_CUDA_ARCH_LIST instead of probing.
    args+=(-DBATON_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
    export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
    [ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
    [ -d /usr/local/cuda ] && args+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
    local nvcc_path
    nvcc_path=$(command -v nvcc) && args+=("-DCMAKE_CUDA_COMPILER=$nvcc_path")
  fi
  if [ -d "$deps/usr" ]; then
    args+=(-DBATON_STATIC_DEPS=ON)
  elif [ $dry = 0 ]; then
    record build error "$(elapsed)" '{}' "no .gpu-deps/ in the checkout: run 'bash scripts/trainer_deps_prefix.sh .gpu-deps' before the GPU run and carry it"
    return 1
  fi
  # The Python wheels' CUDA headers and libraries (cuDNN, NVTX, ...), where torch's CMake config
  # looks for them. Its cuDNN check needs the files named: the wheel ships only libcudnn.so.N,
  # which find_library does not take for "cudnn".
  local inc="" lib="" d f
  for d in $("$py" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for f in "$d"/nvidia/*/include "$d"/nvidia/*/*/include; do [ -d "$f" ] && inc="$inc;$f"; done
    for f in "$d"/nvidia/*/lib "$d"/nvidia/*/*/lib; do [ -d "$f" ] && lib="$lib;$f"; done
    for f in "$d"/nvidia/*/include/cudnn.h "$d"/nvidia/*/*/include/cudnn.h; do
      [ -f "$f" ] && args+=("-DCUDNN_INCLUDE_PATH=$(dirname "$f")") && break
    done
    for f in "$d"/nvidia/*/lib/libcudnn.so* "$d"/nvidia/*/*/lib/libcudnn.so*; do
      [ -f "$f" ] && args+=("-DCUDNN_LIBRARY_PATH=$f") && break
    done
  done
  local t0=$(date +%s)
  run "$log" 240 cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBATON_BUILD_ORCHESTRATOR=OFF -DBATON_BUILD_TESTS=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    "-DCMAKE_PREFIX_PATH=${torch_prefix:+$torch_prefix;}$deps/usr" \
    "-DCMAKE_INCLUDE_PATH=${inc#;}" "-DCMAKE_LIBRARY_PATH=${lib#;}" "${args[@]}"
  local rc=$? configure_s=$(($(date +%s) - t0))
  if [ $rc -ne 0 ]; then
    for f in "$build_dir"/CMakeFiles/CMakeError.log "$build_dir"/CMakeFiles/CMakeConfigureLog.yaml; do
      [ -f "$f" ] && { echo "---- $f (last 200 lines)"; tail -200 "$f"; } >>"$log"
    done
    record build fail "$(elapsed)" "{\"configure_seconds\": $configure_s}" \
      "CMake configure failed (exit $rc): $(grep -m3 -E 'CMake Error|error' "$log" | tr '\n' ' ' | cut -c1-600)"
    return 1
  fi
  # At most 420 s on the GPU machine (its many cores build the trainer in a few minutes); a dry
  # run on a small CPU machine may take longer.
  local cap=$([ $dry = 1 ] && echo 1500 || echo 420)
  local budget_s=$(( $(left) - 200 )); [ $budget_s -gt $cap ] && budget_s=$cap; [ $budget_s -lt 60 ] && budget_s=60
  t0=$(date +%s)
  run "$log" "$budget_s" cmake --build "$build_dir" --target baton-train baton_torch_tests baton-bench-trainer -- -j"$(nproc)"
  rc=$?
  local build_s=$(($(date +%s) - t0))
  local torch_v=$(grep -m1 -o 'baton: libtorch [^)]*)' "$log" | sed 's/baton: //')
  local fig="{\"configure_seconds\": $configure_s, \"build_seconds\": $build_s, \"summary\": \"$torch_v, built in ${build_s}s\"}"
  if [ $rc -ne 0 ]; then
    record build fail "$(elapsed)" "$fig" "build failed (exit $rc): $(grep -m5 -E 'error|FAILED' "$log" | tr '\n' ' ' | cut -c1-900)"
    return 1
  fi
  record build pass "$(elapsed)" "$fig"
  bin_dir=$build_dir
}

if [ -n "$bin_dir" ]; then
  bin_dir=$(cd "$bin_dir" && pwd)
else
  CHECK_LOG="$logs/build.log" CHECK_T0=$(date +%s)
  if ! do_build; then
    echo "gpu_check.sh: the build failed; report in $out/report.md"
    exit 1
  fi
fi
bt=$bin_dir/trainer/baton-train
torch_tests=$bin_dir/tests/unit/baton_torch_tests
bench=$bin_dir/bench/baton-bench-trainer
for b in "$bt" "$torch_tests" "$bench"; do
  [ -x "$b" ] || { echo "gpu_check.sh: $b is missing (build it, or pass --bin-dir)" >&2; exit 2; }
done

# ---- shared inputs ------------------------------------------------------------------------------
# write_config FILE RUN_DIR DATA DTYPE STEPS MODEL_YAML [ACCUM DETERMINISTIC CHECKPOINTING]
write_config() {
  cat >"$1" <<EOF
run: {name: gpu-check, dir: $2, steps: $5, seed: 11}
data: {path: $3, batch_size: 4, pad_multiple: 4, pool_factor: 2}
$6
optim: {lr: 2.0e-3, warmup_steps: 2, grad_accum: ${7:-2}}
checkpoint: {every: 2, keep_last: 5}
train: {dtype: $4, device: $device, log_every: 100, deterministic: ${8:-true}, activation_checkpointing: ${9:-none}}
EOF
}
"$bt" synth-data --out "$work/tiny" --episodes 32 --seed 7 --frames 5:14 --height 4 --width 4 \
  --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >"$logs/inputs.log" 2>&1
TINY_MODEL="model: {dim: 24, heads: 2, layers: 2, ffn_dim: 48, freq_dim: 16}"

# ---- (1) the unit tests that have a CUDA variant ------------------------------------------------
unit_tests() {
  BATON_TEST_DEVICE=$device run "$CHECK_LOG" 240 "$torch_tests" \
    --gtest_filter='AttentionTest.*:ModelMaskTest.*:PackingEquivalenceTest.*:RecomputeTest.*'
  local rc=$? fig
  fig=$("$py" "$results_py" gtest "$CHECK_LOG")
  local status=pass
  [ $rc -eq 0 ] || status=fail
  [ "$(echo "$fig" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["passed"])')" -gt 0 ] || status=fail
  record unit-tests-$device $status "$(elapsed)" "$fig" \
    "baton_torch_tests with BATON_TEST_DEVICE=$device (attention, masks, packing equivalence, recompute; deterministic kernels), exit $rc"
}
check unit-tests 60 unit_tests

# ---- (1b) verify-packing: float64 exact, bf16 reported ------------------------------------------
verify_packing() {
  write_config "$work/vp.yaml" "$work/vp" "$work/tiny" float64 4 "$TINY_MODEL"
  local dt status=pass figs="{" rc
  for dt in float64 bfloat16; do
    run "$CHECK_LOG" 120 "$bt" verify-packing --config "$work/vp.yaml" --dtype $dt --device $device --json
    rc=$?
    [ $rc -eq 0 ] || status=fail
    figs+=$(tail -1 "$CHECK_LOG" | "$py" -c '
import json, sys
dt = sys.argv[1]
try:
    r = json.loads(sys.stdin.read())
except ValueError:
    print("\"%s\": \"no JSON (see log)\", " % dt); sys.exit()
loss = max(c["loss_rel_diff"] for c in r["checks"])
grad = max(c["max_grad_rel_diff"] for c in r["checks"])
vec = max(c.get("grad_norm_rel_diff", 0) for c in r["checks"])
print("\"%s_loss_rel_diff\": %.3e, \"%s_max_grad_rel_diff\": %.3e, \"%s_grad_norm_rel_diff\": %.3e, \"%s_tolerance\": %.3e, \"%s_ok\": %s, " % (dt, loss, dt, grad, dt, vec, dt, r["tolerance"], dt, "true" if r["ok"] else "false"))
' $dt)
  done
  figs+="\"device\": \"$device\"}"
  record verify-packing $status "$(elapsed)" "$figs" \
    "packed vs single episodes: float64 must agree to 1e-10; bf16 autocast within its tolerance derived from bf16's unit roundoff and the model's shape, on the loss and on the gradients as one vector"
}
check verify-packing 60 verify_packing

# ---- (2) one optimizer step on the GPU vs the CPU, float64 --------------------------------------
one_step() {
  write_config "$work/os.yaml" "$work/os" "$work/tiny" float64 4 "$TINY_MODEL"
  run "$CHECK_LOG" 120 "$bt" one-step --config "$work/os.yaml" --count 16 --batch-size 4 --device cpu --out "$work/os_cpu.safetensors" &&
    run "$CHECK_LOG" 120 "$bt" one-step --config "$work/os.yaml" --count 16 --batch-size 4 --device $device --out "$work/os_dev.safetensors"
  local rc=$?
  if [ $rc -ne 0 ]; then
    record one-step-vs-cpu error "$(elapsed)" '{}' "one-step exited $rc (see log)"
    return
  fi
  run "$CHECK_LOG" 60 "$bt" tensor-diff "$work/os_dev.safetensors" "$work/os_cpu.safetensors" --max-rel 1e-10
  rc=$?
  record one-step-vs-cpu $([ $rc -eq 0 ] && echo pass || echo fail) "$(elapsed)" \
    "$("$py" "$results_py" tensor-diff "$CHECK_LOG")" \
    "weights after one AdamW step and the reduced gradients, $device vs cpu, float64, 16 episodes in 4 micro-batches: every tensor within 1e-10 (max|a-b|/max|b|)"
}
check one-step-vs-cpu 60 one_step

# ---- (3) exact resume on the device (deterministic kernels) -------------------------------------
resume() {
  local model="model: {dim: $R_DIM, heads: $R_HEADS, layers: $R_LAYERS, ffn_dim: $R_FFN, freq_dim: 32}"
  write_config "$work/full.yaml" "$work/full" "$work/tiny" bfloat16 6 "$model"
  write_config "$work/cut.yaml" "$work/cut" "$work/tiny" bfloat16 6 "$model"
  local rc
  run "$CHECK_LOG" 150 "$bt" train --config "$work/full.yaml" || { record exact-resume error "$(elapsed)" '{}' "uninterrupted run failed (see log)"; return; }
  run "$CHECK_LOG" 150 "$bt" train --config "$work/cut.yaml" --stop-after 3
  rc=$?
  if [ $rc -ne 75 ]; then
    record exact-resume fail "$(elapsed)" "{\"stop_exit\": $rc}" "the stopped run exited $rc, expected 75"
    return
  fi
  run "$CHECK_LOG" 150 "$bt" train --config "$work/cut.yaml" || { record exact-resume error "$(elapsed)" '{}' "resumed run failed (see log)"; return; }
  local status=pass f figs="{"
  for f in transformer/diffusion_pytorch_model.safetensors optimizer.safetensors; do
    run "$CHECK_LOG" 60 "$bt" tensor-diff --bitwise "$work/cut/checkpoints/checkpoint_step_6/$f" "$work/full/checkpoints/checkpoint_step_6/$f" || status=fail
    figs+="\"$(basename "$f" .safetensors)\": $("$py" "$results_py" tensor-diff "$CHECK_LOG"), "
  done
  local mode=$(grep -c '"mode":"exact"' "$work/cut/events/local.0.jsonl" 2>/dev/null)
  [ "${mode:-0}" -ge 1 ] || status=fail
  figs+="\"exact_resumes\": ${mode:-0}}"
  record exact-resume $status "$(elapsed)" "$figs" \
    "bf16 autocast on fp32 weights, dim $R_DIM: 6 steps straight vs stopped after 3 (exit 75) and resumed; final weights and AdamW state compared byte for byte"
}
check exact-resume 90 resume

# ---- (4) + (6) throughput, MFU and peak memory at real width ------------------------------------
throughput() {
  local frames ckpt i=0 status=pass figs="{" rows=() mem_note=""
  read -r -a ckpts <<<"$W_CKPT"
  for frames in $W_ROWS; do
    ckpt=${ckpts[$i]:-none}; i=$((i + 1))
    local ds="$work/wide$frames" cfg="$work/wide$frames.yaml"
    run "$CHECK_LOG" 120 "$bt" synth-data --out "$ds" --episodes 4 --seed 3 --frames "$frames:$frames" \
      --height 8 --width 8 --channels $W_CH --action-dim $W_ADIM --action-steps 4 \
      --text-len $W_TLEN --text-dim $W_TDIM >/dev/null || { status=error; continue; }
    write_config "$cfg" "$work/wide-run" "$ds" bfloat16 4 \
      "model: {dim: $W_DIM, heads: $W_HEADS, layers: $W_LAYERS, ffn_dim: $W_FFN, freq_dim: $W_FREQ, patch_size: 2}" \
      1 false "$ckpt"
    run "$CHECK_LOG" 60 "$bt" plan-memory --config "$cfg" --json >/dev/null
    tail -1 "$CHECK_LOG" >"$work/plan$frames.json"
    run "$CHECK_LOG" 240 "$bench" throughput --config "$cfg" --batch 4 --episodes 4 --reps 3 \
      --device $device --peak-tflops "$peak" --no-op-count --gemm $GEMM || status=fail
    figs+=$("$py" - "$CHECK_LOG" "$work/plan$frames.json" "$frames" "$ckpt" "$device" <<'PY'
import json, sys
log, plan_path, frames, ckpt, device = sys.argv[1:]
rows = [json.loads(l) for l in open(log) if l.startswith("{\"case\"")]
thr = [r for r in rows if r.get("case") == "throughput"]
gemm = [r for r in rows if r.get("case") == "gemm"]
try:
    plan = json.load(open(plan_path))
except ValueError:
    plan = {}
t = thr[-1] if thr else {}
p = plan.get("bytes", {})
# On a GPU the allocator's peak holds no CUDA context: compare it with the plan less its CUDA
# allowance. On the CPU the peak resident set holds everything the plan counts.
planned = p.get("total", 0) - (p.get("runtime", 0) if device == "cuda" else 0)
key = "row%s" % frames
out = {key + "_tokens": t.get("valid_tokens"), key + "_checkpointing": ckpt,
       key + "_tokens_per_s": t.get("tokens_per_s"), key + "_mfu": t.get("mfu"),
       key + "_tflops": (t.get("achieved_flops_per_s") or 0) / 1e12,
       key + "_step_s": t.get("step_seconds_median"),
       key + "_peak_gib": (t.get("peak_bytes") or 0) / 2**30,
       key + "_plan_gib": planned / 2**30,
       key + "_peak_over_plan": (t.get("peak_bytes") or 0) / planned if planned else None}
if gemm:
    out[key + "_gemm_tflops"] = gemm[-1].get("flops_per_s", 0) / 1e12
print(json.dumps(out)[1:-1] + ", ")
PY
)
  done
  figs+="\"peak_tflops\": $peak}"
  record throughput-mfu-memory $status "$(elapsed)" "$figs" \
    "a packed bf16 training step (forward, backward, AdamW) at dim $W_DIM, $W_HEADS heads, ffn $W_FFN, $W_LAYERS blocks, 40 tokens a frame, 4 episodes a row; MFU against $peak TFLOP/s; peak = the CUDA allocator's peak over a step (the process's peak resident set on the CPU), plan = baton-train plan-memory (on a GPU without its CUDA-context allowance, which the allocator does not see)"
}
check throughput-mfu-memory 150 throughput

# ---- (5) block-sparse vs dense masked vs SDPA attention -----------------------------------------
attention() {
  local t p rc status=pass figs="{"
  for t in $ATT_TOKENS; do
    for p in sparse dense sdpa; do
      local extra=()
      [ "$t" = "${ATT_TOKENS%% *}" ] && [ $p != sparse ] && extra=(--check)
      run "$CHECK_LOG" 120 "$bench" attention --tokens "$t" --path $p --device $device \
        --dtype $ATT_DTYPE --heads $ATT_HEADS --head-dim $ATT_HD --reps 3 "${extra[@]}"
      rc=$?
      case $rc in
        0 | 3 | 69) ;;   # 3: out of memory, 69: no SDPA in this libtorch (both are figures)
        *) status=fail ;;
      esac
      figs+=$(tail -1 "$CHECK_LOG" | "$py" -c '
import json, sys
t, p, rc = sys.argv[1:]
try:
    r = json.loads(sys.stdin.read())
except ValueError:
    r = {"error": "unavailable (libtorch < 2)" if rc == "69" else "exit %s" % rc}
k = "%s_%s" % (p, t)
if "error" in r:
    print("\"%s\": \"%s\", " % (k, r["error"]))
else:
    s = "\"%s_ms\": %.3f, \"%s_peak_gib\": %.3f, " % (k, r["seconds"] * 1e3, k, r.get("peak_bytes", 0) / 2**30)
    if "rel_err" in r:
        s += "\"%s_rel_err\": %.3e, \"%s_rel_err_bound\": %.3e, \"%s_max_rel_diff\": %.3e, " % (
            k, r["rel_err"], k, r["rel_err_bound"], k, r["max_rel_diff"])
    print(s)
' "$t" $p $rc)
    done
  done
  figs+="\"dtype\": \"$ATT_DTYPE\", \"heads\": $ATT_HEADS, \"head_dim\": $ATT_HD}"
  record attention $status "$(elapsed)" "$figs" \
    "one self-attention forward + backward over a packed row of 4 episodes (median of 3); sdpa = torch's scaled_dot_product_attention with the same boolean mask; rel_err: normwise error against the block-sparse path in float64, with its bound from the dtype's unit roundoff and the reductions"
}
check attention 120 attention

archive_logs
echo "report: $out/report.md ($(($(date +%s) - start)) s)"
exit $failed
