// A sweep for the sweeps pages' browser test, made through the real path: six member runs
// (optim.lr 1e-4, 3e-4, 1e-3 x run.seed 1, 2) written as event files and ingested like any run
// (run_fixture.h), then the sweep and its member rows as `baton sweep` records them
// (store_sweeps.h). The members' final losses are scaled so that their order by final loss is
// neither their index order nor their order by learning rate; member 4 was preempted once (two
// attempts, one restart) and member 5 still runs. Test-only; single-threaded.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/store/store_sweeps.h"
#include "run_fixture.h"

namespace baton::webtest {

struct SweepFixture {
  int64_t sweep_id = 0;
  std::vector<int64_t> run_ids;  // by member index
};

inline Result<SweepFixture> CreateSweepThroughIngest(Store& store, const std::string& runs_root) {
  const std::vector<double> lrs = {1e-4, 3e-4, 1e-3};
  const std::vector<double> scale = {1.3, 0.8, 1.1, 0.6, 1.0, 0.9};
  const std::string array = "8800";
  SweepFixture out;
  for (int64_t i = 0; i < 6; ++i) {
    RunSpec r;
    r.name = "lr-seed-" + std::to_string(i);
    r.target_steps = 40;
    r.warmup_steps = 5;
    r.base_lr = lrs[size_t(i / 2)];
    r.loss_scale = scale[size_t(i)];
    const std::string job = array + "_" + std::to_string(i);
    const double t0 = 1.75e9 + double(i) * 300;
    if (i == 4) {
      r.attempts = {Attempt(job, 0, "fresh", 0, 25, 0, {20}, "requeue", "preempted", t0),
                    Attempt(job, 1, "exact", 20, 40, 0, {40}, "done", "completed", t0 + 400)};
    } else if (i == 5) {
      r.attempts = {Attempt(job, 0, "fresh", 0, 30, 0, {20}, "", "", t0)};
    } else {
      r.attempts = {Attempt(job, 0, "fresh", 0, 40, 0, {20, 40}, "done", "completed", t0)};
    }
    BATON_ASSIGN_OR_RETURN(const int64_t id, CreateRunThroughIngest(store, runs_root, r));
    out.run_ids.push_back(id);
  }
  Status st = store.Write([&]() -> Status {
    SweepRecord s;
    s.name = "lr-seed";
    s.spec_path = runs_root + "/lr-seed.yaml";
    s.spec =
        "base: base.yaml\nname: lr-seed\nmax_parallel: 2\n"
        "grid: {optim.lr: [1.0e-4, 3.0e-4, 1.0e-3], run.seed: [1, 2]}\n";
    s.base_config = runs_root + "/base.yaml";
    s.max_parallel = 2;
    s.keys = R"(["optim.lr","run.seed"])";
    s.owner = "fixture";
    s.created_at = 1.75e9 - 60;
    BATON_ASSIGN_OR_RETURN(out.sweep_id, CreateSweepInTx(store, s));
    BATON_RETURN_IF_ERROR(SetSweepDirInTx(store, out.sweep_id, runs_root + "/sweep-lr-seed"));
    BATON_RETURN_IF_ERROR(SetSweepJobInTx(store, out.sweep_id, array));
    for (int64_t i = 0; i < 6; ++i) {
      const nlohmann::json values = {{"optim.lr", lrs[size_t(i / 2)]}, {"run.seed", 1 + i % 2}};
      BATON_RETURN_IF_ERROR(
          AddSweepMemberInTx(store, {out.sweep_id, i, out.run_ids[size_t(i)], values.dump()}));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace baton::webtest
