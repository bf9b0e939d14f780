#include "orchestrator/cli/cli_context.h"
#include "schema/clock.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "orchestrator/alerts/eval_job_alert.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/reconcile/sync_pass.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "schema/events.h"

namespace baton {

int ReportError(const Status& status) {
  std::cerr << "baton: " << status.ToString() << "\n";
  return status.exit_code();
}

EvalJobOptions WatcherEvalJobs(const ActingUser& me, const AlertsSection& lab) {
  EvalJobOptions evals;
  evals.trainer_bin = FindTrainerBinary();
  evals.acting_user = &me;
  evals.release_requeue_holds = true;
  evals.on_failure = EvalFailedHook(lab);
  return evals;
}

Result<std::unique_ptr<Store>> OpenDefaultStore() { return Store::Open(DefaultDbPath()); }

std::unique_ptr<SlurmClient> MakeSlurmClient(double timeout_s) {
  return std::make_unique<RealSlurmClient>(timeout_s);
}

std::string SelfPath() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "baton" : p.string();
}

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) std::cerr << "baton: warning: " << w << "\n";
}

Status SyncQueriedRuns(Store& store, std::vector<RunRecord>* runs, bool reconcile) {
  std::unique_ptr<SlurmClient> slurm;
  if (reconcile) slurm = MakeSlurmClient(kQuerySlurmTimeoutS);
  // Other users' jobs are shown as last ingested, not reconciled (job_permission.h).
  const ActingUser me = CurrentActingUser();
  SyncOptions options{slurm.get()};
  options.acting_user = &me;
  BATON_ASSIGN_OR_RETURN(SyncReport report, SyncRuns(store, *runs, options, UnixTimeNow()));
  PrintWarnings(report.ingested.warnings);
  if (report.reconcile.code() == Code::kUnavailable) {
    std::cerr << "baton: warning: status may be stale: " << report.reconcile.message() << "\n";
  } else if (!report.reconcile.ok()) {
    return report.reconcile;
  }
  *runs = std::move(report.runs);
  return Status::Ok();
}

void PrintTable(std::ostream& out, const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t i = 0; i < cells.size(); ++i) {
      text += cells[i];
      if (i + 1 < cells.size()) text += std::string(width[i] - cells[i].size() + 2, ' ');
    }
    out << text << "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
}

std::string FormatTime(std::optional<double> unix_s) {
  if (!unix_s || std::isnan(*unix_s)) return "-";
  const std::time_t t = static_cast<std::time_t>(*unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace baton
