#!/usr/bin/env bash
# scripts/gpu_check.sh --dry-run end to end on the CPU, with the binaries of this build: every
# check of the GPU run (CUDA-variant unit tests, verify-packing, one step vs the CPU, exact resume,
# throughput / MFU / memory against the plan, the attention paths) runs at small sizes and passes,
# and the report, the JSON results and the log archive are written. A check that does not fit the
# budget is recorded as skipped, not passed.
# usage: gpu_check_test.sh BUILD_DIR SOURCE_DIR
source "$(dirname "$0")/../cli/lib.sh"
build=$1 src=$2

expect_exit 0 bash "$src/scripts/gpu_check.sh" --dry-run --bin-dir "$build" --out "$tmp/out"
for f in report.md results.jsonl logs.tar.gz meta.json; do
  [ -s "$tmp/out/$f" ] || fail "no $f in the output folder"
done
python3 - "$tmp/out/results.jsonl" <<'PY'
import json, sys
rows = {r["check"]: r for r in map(json.loads, open(sys.argv[1]))}
want = ["unit-tests-cpu", "verify-packing", "one-step-vs-cpu", "exact-resume",
        "throughput-mfu-memory", "attention"]
assert list(rows) == want, list(rows)
for name, r in rows.items():
    assert r["status"] == "pass", (name, r)
f = rows["unit-tests-cpu"]["figures"]
assert f["passed"] >= 10 and f["failed"] == 0, f
f = rows["verify-packing"]["figures"]
assert f["float64_loss_rel_diff"] <= 1e-10 and f["float64_max_grad_rel_diff"] <= 1e-10, f
# bf16's tolerance is derived from its unit roundoff and the model (rounding_bound.h): above
# float32's rounding, under the O(1) of a broken packing.
assert 0 < f["bfloat16_grad_norm_rel_diff"] <= f["bfloat16_tolerance"] < 0.5, f
f = rows["one-step-vs-cpu"]["figures"]
assert f["tensors"] > 0 and f["max_rel"] <= 1e-10, f
f = rows["exact-resume"]["figures"]
for k in ("diffusion_pytorch_model", "optimizer"):
    assert f[k]["differ"] == 0 and f[k]["bit_identical"] == f[k]["tensors"] > 0, f
f = rows["throughput-mfu-memory"]["figures"]
for row in ("row12", "row20"):
    assert f[row + "_tokens"] == 4 * int(row[3:]) * 40, f     # 40 tokens a frame, 4 episodes
    assert f[row + "_tokens_per_s"] > 0 and 0 < f[row + "_mfu"] < 1, f
    assert f[row + "_peak_gib"] > 0 and f[row + "_plan_gib"] > 0, f
f = rows["attention"]["figures"]
for t in (1024, 4096):
    assert f["sparse_%d_ms" % t] > 0 and f["dense_%d_ms" % t] > 0, f
# The dry run's float32 dense path against the block-sparse path in float64, within its bound
# from float32's unit roundoff (rounding_bound.h).
assert 0 < f["dense_1024_rel_err"] <= f["dense_1024_rel_err_bound"] < 1e-4, f
# SDPA exists from libtorch 2 on: a figure there, named as unavailable on Debian's 1.13.
assert f.get("sdpa_1024") == "unavailable (libtorch < 2)" or "sdpa_1024_ms" in f, f
PY
checks=$((checks + 1)); echo "ok: dry run: every check passed with its figures"
report=$(cat "$tmp/out/report.md")
expect_in "$report" "| one-step-vs-cpu | PASS |"
expect_in "$report" "dry run on the CPU"
# Listed into a file first: with pipefail, grep -q leaving early would fail tar with SIGPIPE.
tar -tzf "$tmp/out/logs.tar.gz" >"$tmp/listing"
grep -q "logs/exact-resume.log" "$tmp/listing" || fail "exact-resume.log not archived"
checks=$((checks + 1)); echo "ok: logs archived"

# No time left: checks are skipped and say why; nothing claims a pass.
expect_exit 0 bash "$src/scripts/gpu_check.sh" --dry-run --bin-dir "$build" --out "$tmp/short" \
  --budget 5 --only one-step-vs-cpu,attention
python3 - "$tmp/short/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["check"] for r in rows] == ["one-step-vs-cpu", "attention"], rows
assert all(r["status"] == "skipped" and "budget" in r["note"] for r in rows), rows
PY
checks=$((checks + 1)); echo "ok: a budget too short skips checks, naming the budget"
expect_exit 2 bash "$src/scripts/gpu_check.sh" --dry-run --frobnicate
expect_in "$err" "unknown option --frobnicate"
echo "PASS: $checks checks"
