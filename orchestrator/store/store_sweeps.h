// The store's sweeps (the migration that adds sweeps and sweep_members): a sweep is many runs
// submitted as one SLURM job array (docs/sweeps.md). The sweeper writes a sweep and its members
// in the transaction that creates their runs; the CLI and the API read them. Runs stay the
// source of truth for status and figures; a member row only says which sweep, which index and
// which values.
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller owns;
// thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct SweepRecord {
  int64_t id = 0;
  std::string name;
  std::string spec_path;
  std::string spec;
  std::string base_config;
  std::string sweep_dir;
  std::string job_id;  // the array's (the latest, after a resume)
  int64_t max_parallel = 0;
  std::string keys;  // JSON list of the varied keys
  std::string owner;
  bool cancelled = false;
  double created_at = 0;
};

struct SweepMemberRecord {
  int64_t sweep_id = 0;
  int64_t index = 0;  // the array task id
  int64_t run_id = 0;
  std::string values;  // JSON object key -> value
};

// Inside the caller's write transaction. The new sweep's id.
[[nodiscard]] Result<int64_t> CreateSweepInTx(Store& store, const SweepRecord& sweep);
[[nodiscard]] Status AddSweepMemberInTx(Store& store, const SweepMemberRecord& member);
[[nodiscard]] Status SetSweepDirInTx(Store& store, int64_t sweep_id, const std::string& dir);
[[nodiscard]] Status SetSweepJobInTx(Store& store, int64_t sweep_id, const std::string& job_id);
[[nodiscard]] Status SetSweepCancelledInTx(Store& store, int64_t sweep_id, bool cancelled);

// Newest first.
[[nodiscard]] Result<std::vector<SweepRecord>> ListSweeps(Store& store);
// By id, or by name when `id_or_name` is not all digits (the newest of that name). kNotFound
// naming it when there is none.
[[nodiscard]] Result<SweepRecord> FindSweep(Store& store, const std::string& id_or_name);
// In index order.
[[nodiscard]] Result<std::vector<SweepMemberRecord>> ListSweepMembers(Store& store,
                                                                      int64_t sweep_id);

}  // namespace baton
