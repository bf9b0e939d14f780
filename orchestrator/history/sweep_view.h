// What `baton sweep show`, `baton sweeps` and the sweep page say about a sweep: its members with
// their varied values, status and final figures, and status counts. Built from the store (the
// member rows, each member's run summary and time buckets); the caller syncs the runs first.
// Free functions; thread-compatible (one Store per thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/store/store.h"
#include "orchestrator/store/store_sweeps.h"
#include "schema/status.h"

namespace baton {

struct SweepMemberView {
  int64_t index = 0;
  int64_t run_id = 0;
  std::string name;
  std::string job_id;
  nlohmann::json values;  // key -> value
  std::string status;
  std::string reason;
  std::optional<int64_t> last_step;
  int64_t target_steps = 0;
  std::optional<double> final_loss;  // the last step's loss
  std::optional<double> ettr;        // productive / wall
  int64_t restarts = 0;              // attempts after the first
  // The member's lowest held-out eval loss and the checkpoint step it is at (store_evals.h).
  std::optional<double> best_eval_loss;
  std::optional<int64_t> best_eval_step;
};

struct SweepView {
  SweepRecord sweep;
  std::vector<std::string> keys;
  std::vector<SweepMemberView> members;
  std::map<std::string, int64_t> counts;  // status -> members
};

[[nodiscard]] Result<SweepView> BuildSweepView(Store& store, const SweepRecord& sweep);

// The JSON of `baton sweep show --json` and GET /api/sweeps/ID: {id, name, job_id, keys, counts,
// members: [{index, run_id, name, job_id, values, status, reason, last_step, target_steps,
// final_loss, ettr, restarts, best_eval_loss, best_eval_step}]}.
nlohmann::json SweepViewJson(const SweepView& view);

}  // namespace baton
