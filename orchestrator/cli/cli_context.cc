#include "orchestrator/cli/cli_context.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "schema/events.h"

using nlohmann::json;

namespace baton {

namespace {

json NullableInt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
json NullableDouble(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json NullableDouble(double v) { return std::isnan(v) ? json(nullptr) : json(v); }
json NullableText(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

int ReportError(const Status& status) {
  std::cerr << "baton: " << status.ToString() << "\n";
  return status.exit_code();
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

Status SyncRuns(Store& store, std::vector<RunRecord>* runs, bool reconcile) {
  std::unique_ptr<SlurmClient> slurm;
  for (RunRecord& run : *runs) {
    // Finished runs too: their last lines (attempt_end) may still be unread; ingest is cheap.
    Result<IngestStats> s = IngestRun(store, run);
    if (!s.ok()) return s.status().Annotate("ingesting run " + std::to_string(run.id));
    for (const std::string& w : s->warnings) std::cerr << "baton: warning: " << w << "\n";
    if (reconcile && !IsTerminal(run.status)) {
      Result<RunRecord> fresh = store.GetRun(run.id);
      if (!fresh.ok()) return fresh.status();
      if (!slurm) slurm = MakeSlurmClient(kQuerySlurmTimeoutS);
      Status st = ReconcileRun(store, *slurm, *fresh, UnixTimeNow());
      if (st.code() == Code::kUnavailable) {
        std::cerr << "baton: warning: status may be stale: " << st.message() << "\n";
        reconcile = false;  // do not wait for a down controller once per run
      } else if (!st.ok()) {
        return st;
      }
    }
    Result<RunRecord> fresh = store.GetRun(run.id);
    if (!fresh.ok()) return fresh.status();
    run = std::move(fresh).value();
  }
  return Status::Ok();
}

json RunJson(const RunRecord& r) {
  return json{{"id", r.id},
              {"run_id", r.id},
              {"name", r.name},
              {"status", RunStatusName(r.status)},
              {"reason", r.reason},
              {"run_dir", r.run_dir},
              {"config_source", r.config_source},
              {"target_steps", r.target_steps},
              {"max_restarts", r.max_restarts},
              {"max_failures", r.max_failures},
              {"job_id", NullableText(r.job_id)},
              {"created_at", r.created_at},
              {"updated_at", r.updated_at}};
}

json AttemptJson(const AttemptRecord& a, int index) {
  return json{{"attempt", index},
              {"job_id", a.job_id},
              {"restart_count", a.restart_count},
              {"nodes", a.nodes},
              {"started_at", NullableDouble(a.started_at)},
              {"ended_at", NullableDouble(a.ended_at)},
              {"slurm_state", NullableText(a.slurm_state)},
              {"exit_code", NullableInt(a.exit_code)},
              {"action", NullableText(a.action)},
              {"end_reason", NullableText(a.end_reason)},
              {"trainer_end_reason", NullableText(a.trainer_end_reason)},
              {"trainer_message", NullableText(a.trainer_message)},
              {"trainer_exit_code", NullableInt(a.trainer_exit_code)},
              {"resume_mode", NullableText(a.resume_mode)},
              {"checkpoint", NullableText(a.checkpoint)},
              {"step0", NullableInt(a.step0)},
              {"last_step", NullableInt(a.last_step)},
              {"resume_warmup_steps", a.resume_warmup_steps},
              {"warmup_until", NullableInt(a.warmup_until)},
              {"world_size", NullableInt(a.world_size)}};
}

json CheckpointJson(const CheckpointRecord& c) {
  return json{{"step", c.step},     {"path", c.path},
              {"bytes", c.bytes},   {"seconds", NullableDouble(c.seconds)},
              {"reason", c.reason}, {"valid", c.valid},
              {"time", c.time}};
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
