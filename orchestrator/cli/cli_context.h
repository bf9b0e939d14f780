// What the subcommands share: the store, SLURM, error printing, the query commands' sync pass,
// the JSON form of records (record_json.h, the same as the web API's) and their table form.
// Single-threaded.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/reconcile/eval_job_pass.h"
#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/record_json.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/store.h"
#include "schema/alerts_config.h"
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

// Prints "baton: warning: <w>" for each of `warnings` to stderr.
void PrintWarnings(const std::vector<std::string>& warnings);

// The sync pass (orchestrator/reconcile/sync_pass.h) of a query command: brings `runs` up to
// date, asking SLURM (with kQuerySlurmTimeoutS) when `reconcile`. SLURM being unreachable is a
// warning on stderr, not an error: history already ingested is still worth showing. Replaces
// the runs with their records after the pass.
[[nodiscard]] Status SyncQueriedRuns(Store& store, std::vector<RunRecord>* runs, bool reconcile);

// The eval jobs of `baton watch` and `baton serve` (eval_job_pass.h): this binary's baton-train,
// only `me`'s runs, requeue holds released, a failed retry raised as an incident for `lab`'s
// sinks. Both must outlive the options.
EvalJobOptions WatcherEvalJobs(const ActingUser& me, const AlertsSection& lab);

// Seconds query commands wait for SLURM before showing possibly stale status.
inline constexpr double kQuerySlurmTimeoutS = 10.0;

// A plain text table with left-aligned columns.
void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);

// "2024-05-01 12:00:03" (local time) or "-".
std::string FormatTime(std::optional<double> unix_s);

}  // namespace baton
