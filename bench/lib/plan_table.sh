# plan_table BATON_TRAIN WORK: the memory plan of configs/lingbot_va_5b_8x80.yaml at W = 8 for
# rows of 1 to 4 of its 36-frame episodes, with the fp32 master replicated (optim.master
# replicated, the layout before the distributed optimizer) and sharded beside AdamW, side by side:
# the per-rank total and whether it fits 80 GiB (planned with blocks+attention). Sourced by
# bench/sharding_bench.sh.
plan_table() {
  local bt=$1 work=$2 rows master
  for rows in 1 2 3 4; do
    for master in replicated sharded; do
      sed -e "s/^  batch_size: .*/  batch_size: $rows/" \
        -e "s/^  activation_checkpointing: .*/  activation_checkpointing: blocks+attention/" \
        -e "s/^  master: .*/  master: $master/" configs/lingbot_va_5b_8x80.yaml \
        >"$work/plan.$rows.$master.yaml"
      # The config states both keys the table varies; a missing one would plan the same twice.
      grep -q "^  master: $master$" "$work/plan.$rows.$master.yaml" &&
        grep -q "^  batch_size: $rows$" "$work/plan.$rows.$master.yaml" ||
        { echo "plan_table: configs/lingbot_va_5b_8x80.yaml lost its optim.master or data.batch_size line" >&2; return 1; }
      "$bt" plan-memory --config "$work/plan.$rows.$master.yaml" --json --world-size 8 \
        --frames 36 --height 24 --width 20 --action-steps 16 --text-len 512 --channels 48 \
        --action-dim 30 --text-dim 4096 >"$work/plan.$rows.$master.json"
    done
  done
  python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
gib = 1 << 30
print("memory plan, lingbot_va_5b_8x80 at W=8, blocks+attention, per rank:")
print(f"{'episodes/row':>12} {'tokens':>7}  {'master replicated':>20}  {'master sharded':>18}  saved")
for rows in (1, 2, 3, 4):
    r = json.load(open(f"{w}/plan.{rows}.replicated.json"))
    s = json.load(open(f"{w}/plan.{rows}.sharded.json"))
    rt, st = r["bytes"]["total"] / gib, s["bytes"]["total"] / gib
    fit = lambda x: "fits" if x <= 80 else "over"
    print(f"{rows:>12} {r['row']['tokens']:>7}  {rt:8.2f} GiB ({fit(rt)} 80)  {st:6.2f} GiB ({fit(st)} 80)"
          f"  {rt - st:5.2f} GiB")
PY
}
