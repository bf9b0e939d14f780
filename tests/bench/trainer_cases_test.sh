#!/usr/bin/env bash
# baton-bench-trainer's cases, small, on the CPU: the JSON fields the bench scripts read (the GPU
# check among them), the dense and sdpa outputs against the block-sparse path's, the exit codes
# (3 out of memory, 69 sdpa on libtorch < 2, 78 --device cuda without CUDA), and the derived
# figures (mfu, FLOP/s) recomputed from the fields they come from.
# usage: trainer_cases_test.sh BATON_BENCH_TRAINER BATON_TRAIN
source "$(dirname "$0")/../cli/lib.sh"
bb=$1
bt=$2
# The cases use every CPU; on a machine busy with other work, OpenMP threads that spin at each
# barrier for a descheduled sibling make a sub-second case take many seconds.
export OMP_WAIT_POLICY=PASSIVE

# check JSON_LINE PYTHON_ASSERTIONS...: each assertion is a python expression over `r` (the object).
check() {
  local line=$1; shift
  python3 - "$line" "$@" <<'PY' || fail "assertion failed on: $line"
import json, sys
r = json.loads(sys.argv[1])
for a in sys.argv[2:]:
    if not eval(a, {"r": r}):
        sys.exit(f"false: {a}")
PY
  checks=$((checks + 1))
  echo "ok: $(echo "$line" | cut -c1-60)... [$*]"
}

# The bound of a --check, restated from trainer/train/rounding_bound.h:
#   2 (u sqrt(3) + u_acc (sqrt(head_dim) + 2 sqrt(max_keys)))
# u the dtype's unit roundoff (bf16 2^-8, float32 2^-24), u_acc float32's (the kernels' sums): the
# scores, probabilities and output stored once each, q.k and p.v summed. It is derived from the
# dtype, never fitted to this CPU's kernels (bf16 rounds differently on other CPUs). The error
# must be under it and, in bf16, above float32's bound: bf16 really computed.
bounded() {  # bounded DTYPE: sets B, the python assertions on r
  local u=2.0**-24 f32="2 * (2.0**-24 * 3 ** 0.5 + 2.0**-24 * (r['head_dim'] ** 0.5 + 2 * r['max_keys'] ** 0.5))"
  [ "$1" = bfloat16 ] && u=2.0**-8
  B=("r['unit_roundoff'] == $u and r['accumulation_roundoff'] == 2.0**-24"
    "abs(r['rel_err_bound'] - 2 * ($u * 3 ** 0.5 + 2.0**-24 * (r['head_dim'] ** 0.5 + 2 * r['max_keys'] ** 0.5))) < 1e-15"
    "0 < r['rel_err'] <= r['rel_err_bound']"
    "'$1' != 'bfloat16' or r['rel_err'] > $f32"
    "0 < r['max_keys'] <= r['tokens']")
}

# 1. Attention: sparse and dense, float32 and bf16, against the block-sparse path in float64.
for dtype in float32 bfloat16; do
  bounded $dtype
  for path in sparse dense; do
    expect_exit 0 "$bb" attention --tokens 2048 --path $path --dtype $dtype --check
    check "$out" "r['case'] == 'attention' and r['path'] == '$path' and r['tokens'] == 1920" \
      "r['device'] == 'cpu' and r['dtype'] == '$dtype' and r['heads'] == 2 and r['head_dim'] == 64" \
      "0 < r['forward_seconds'] <= r['seconds']" \
      "r['peak_bytes'] > 0 and r['peak_rss_bytes'] > 0 and r['rss_growth_bytes'] >= 0" \
      "r['allowed_pairs'] == 256512 and r['computed_pairs'] >= r['allowed_pairs']" \
      "${B[@]}"
  done
done
# Other shapes: the bound follows head_dim and the keys.
bounded float32
expect_exit 0 "$bb" attention --tokens 1024 --path dense --check --reps 3 --heads 3 --head-dim 32
check "$out" "r['reps'] == 3 and r['heads'] == 3 and r['head_dim'] == 32" \
  "r['best_seconds'] <= r['seconds'] and r['computed_pairs'] == 960 * 960" \
  "${B[@]}" "'mask_seconds' in r"
# Without --check there is no error figure.
expect_exit 0 "$bb" attention --tokens 1024 --path sparse
check "$out" "'max_rel_diff' not in r and 'rel_err' not in r and r['reps'] == 1"

# sdpa: libtorch >= 2 runs it and it must agree with the block-sparse path, in float32 and in
# bf16 (the GPU check's dtype); libtorch 1.x refuses with exit 69. A libtorch 2 build that
# refused would name itself (built against libtorch 2...) and fail the message check.
for dtype in float32 bfloat16; do
  bounded $dtype
  rc=0
  out=$("$bb" attention --tokens 2048 --path sdpa --dtype $dtype --check 2>"$tmp/stderr") || rc=$?
  if [ $rc -eq 69 ]; then
    expect_in "$(cat "$tmp/stderr")" "needs libtorch >= 2"
    expect_in "$(cat "$tmp/stderr")" "built against libtorch 1."
  else
    [ $rc -eq 0 ] || fail "sdpa $dtype exited $rc: $(cat "$tmp/stderr")"
    # Not zero: torch's kernel, not the block-sparse path compared with itself.
    check "$out" "r['path'] == 'sdpa' and r['dtype'] == '$dtype' and r['tokens'] == 1920" \
      "${B[@]}"
  fi
done

# A mask that cannot be allocated is a figure (exit 3), not a crash: under a 6 GiB address
# space, the dense path's 98k x 98k mask (9.6 GB) cannot exist.
rc=0
out=$(ulimit -v $((6 * 1024 * 1024)); "$bb" attention --tokens 98304 --path dense --heads 1 \
  --head-dim 8 2>"$tmp/stderr") || rc=$?
[ $rc -eq 3 ] || fail "dense at 98k tokens under ulimit -v exited $rc, expected 3: $(cat "$tmp/stderr")"
check "$out" "r['case'] == 'attention' and r['path'] == 'dense' and r['tokens'] == 98240" \
  "r['error'] == 'out of memory' and r['device'] == 'cpu'"

# --device cuda: exit 78 with a reason on a CPU-only build (or no GPU); runs where there is one.
cuda_rc=0
out=$("$bb" attention --tokens 1024 --device cuda 2>"$tmp/stderr") || cuda_rc=$?
if [ $cuda_rc -eq 78 ]; then
  expect_in "$(cat "$tmp/stderr")" "--device cuda"
  [ "$(wc -l <"$tmp/stderr")" -eq 1 ] || fail "expected one line: $(cat "$tmp/stderr")"
else
  [ $cuda_rc -eq 0 ] || fail "--device cuda exited $cuda_rc: $(cat "$tmp/stderr")"
  check "$out" "r['device'].startswith('cuda')"
fi

# 2. Throughput on a tiny dataset, float32 and bf16 autocast.
"$bt" synth-data --out "$tmp/ds" --episodes 8 --seed 7 --frames 4:8 --height 4 --width 4 \
  --channels 2 --action-dim 4 --action-steps 2 --text-len 2 --text-dim 8 >/dev/null
config() {  # config FILE DTYPE [DEVICE]
  cat >"$1" <<YAML
run: {name: t, dir: $tmp/run, steps: 1, seed: 11}
data: {path: $tmp/ds, batch_size: 4, pad_multiple: 4}
model: {dim: 24, heads: 2, layers: 1, ffn_dim: 48, freq_dim: 16}
optim: {lr: 2.0e-3, warmup_steps: 0}
train: {dtype: $2, device: ${3:-cpu}}
YAML
}
for dtype in float32 bfloat16; do
  config "$tmp/$dtype.yaml" $dtype
  expect_exit 0 "$bb" throughput --config "$tmp/$dtype.yaml" --batch 1,4 --episodes 8 --reps 2 \
    --gemm 64 --peak-tflops 1
  [ "$(echo "$out" | wc -l)" -eq 3 ] || fail "expected 3 lines, got: $out"
  for i in 1 2; do
    check "$(echo "$out" | sed -n ${i}p)" "r['case'] == 'throughput' and r['device'] == 'cpu'" \
      "r['dtype'] == '$dtype' and r['batch'] == [1, 4][$i - 1] and r['reps'] == 2" \
      "r['valid_tokens'] > 0 and r['attention_ops_per_layer'] > 0" \
      "0 < r['best_step_seconds'] <= r['step_seconds_median']" \
      "abs(r['tokens_per_s'] * r['best_step_seconds'] - r['valid_tokens']) < 1e-6 * r['valid_tokens']" \
      "abs(r['achieved_flops_per_s'] - r['flops_per_token'] * r['tokens_per_s']) < 1e-9 * r['achieved_flops_per_s']" \
      "abs(r['mfu'] - r['achieved_flops_per_s'] / 1e12) < 1e-12" \
      "r['peak_bytes'] > 0 and r['peak_reserved_bytes'] > 0"
  done
  # The GEMM of the step's matmul dtype: float32 on the CPU.
  check "$(echo "$out" | sed -n 3p)" "r['case'] == 'gemm' and r['dtype'] == 'float32'" \
    "r['m'] == r['k'] == r['n'] == 64 and r['reps'] == 2 and r['device'] == 'cpu'"
done
# --no-op-count drops the op count; without --peak-tflops there is no mfu.
expect_exit 0 "$bb" throughput --config "$tmp/float32.yaml" --batch 2 --episodes 8 --reps 1 \
  --gemm 64 --no-op-count
check "$(echo "$out" | sed -n 1p)" "'attention_ops_per_layer' not in r and 'mfu' not in r" \
  "r['attention_calls_per_layer'] > 0 and r['batch'] == 2"
# The device comes from train.device unless --device says otherwise.
config "$tmp/cuda.yaml" float32 cuda
rc=0
"$bb" throughput --config "$tmp/cuda.yaml" --batch 1 --episodes 4 --reps 1 --no-op-count \
  >/dev/null 2>"$tmp/stderr" || rc=$?
[ $rc -eq "$cuda_rc" ] || fail "train.device cuda exited $rc, --device cuda $cuda_rc"
checks=$((checks + 1))
echo "ok: train.device cuda exits as --device cuda does ($rc)"
expect_exit 0 "$bb" throughput --config "$tmp/cuda.yaml" --device cpu --batch 1 --episodes 4 \
  --reps 1 --no-op-count
check "$(echo "$out" | sed -n 1p)" "r['device'] == 'cpu'"
expect_exit 64 "$bb" throughput --config "$tmp/float32.yaml" --episodes 99
expect_in "$err" "has 8 episodes"

# 3. GEMM, float32 and bfloat16.
for dtype in float32 bfloat16; do
  expect_exit 0 "$bb" gemm --rows 96 --inner 64 --cols 32 --dtype $dtype --reps 3
  check "$out" "r['case'] == 'gemm' and r['dtype'] == '$dtype' and r['device'] == 'cpu'" \
    "(r['m'], r['k'], r['n'], r['reps']) == (96, 64, 32, 3)" \
    "0 < r['best_seconds'] <= r['median_seconds']" \
    "abs(r['flops_per_s'] - 2 * 96 * 64 * 32 / r['best_seconds']) < 1e-9 * r['flops_per_s']"
done

echo "trainer bench cases: $checks checks passed"
