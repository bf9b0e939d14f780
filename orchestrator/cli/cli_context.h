// What the subcommands share: the store, SLURM, error printing, syncing run history (ingest +
// reconcile) and the JSON/table forms of records. Single-threaded.
#pragma once

#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// Prints "baton: <error>" to stderr and returns the exit code for it.
int ReportError(const Status& status);

// The store at $BATON_HOME/baton.db.
[[nodiscard]] Result<std::unique_ptr<Store>> OpenDefaultStore();

// The real SLURM client with a per-command timeout.
std::unique_ptr<SlurmClient> MakeSlurmClient(double timeout_s);

// Absolute path of the running baton binary.
std::string SelfPath();

// Brings `runs` up to date: ingests their event files, then (when `reconcile`) asks SLURM about
// their jobs. SLURM being unreachable is a warning on stderr, not an error: history already
// ingested is still worth showing. Re-reads the runs afterwards.
[[nodiscard]] Status SyncRuns(Store& store, std::vector<RunRecord>* runs, bool reconcile);

// Seconds query commands wait for SLURM before showing possibly stale status.
inline constexpr double kQuerySlurmTimeoutS = 10.0;

nlohmann::json RunJson(const RunRecord& r);
nlohmann::json AttemptJson(const AttemptRecord& a, int index);
nlohmann::json CheckpointJson(const CheckpointRecord& c);

// A plain text table with left-aligned columns.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

// "2024-05-01 12:00:03" (local time) or "-".
std::string FormatTime(std::optional<double> unix_s);

}  // namespace baton
