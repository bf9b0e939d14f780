#include "orchestrator/ingest/eval_file_ingest.h"

#include <map>

#include "orchestrator/store/store_evals.h"
#include "schema/clock.h"
#include "schema/eval_results.h"
#include "schema/run_folder.h"

namespace baton {

Result<IngestStats> IngestEvalFiles(Store& store, const RunRecord& run) {
  IngestStats stats;
  if (run.run_dir.empty()) return stats;
  const EvalResults read = ReadEvalResults(RunFolder{run.run_dir});
  stats.warnings = read.problems;
  if (read.by_step.empty()) return stats;
  BATON_ASSIGN_OR_RETURN(const std::vector<EvalRecord> stored, ListEvals(store, run.id));
  std::map<int64_t, const EvalRecord*> by_step;
  for (const EvalRecord& e : stored) by_step[e.step] = &e;
  const double now = UnixTimeNow();
  std::vector<EvalRecord> changed;
  for (const auto& [step, result] : read.by_step) {
    if (step < 0) {
      stats.warnings.push_back(RunFolder{run.run_dir}.EvalFile(step) + ": a negative step");
      continue;
    }
    EvalRecord row = EvalRecordOf(result, run.id, kEvalFromFile, now);
    auto it = by_step.find(step);
    if (it != by_step.end() && SameEvalResult(*it->second, row)) continue;
    changed.push_back(std::move(row));
  }
  if (changed.empty()) return stats;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    for (const EvalRecord& row : changed) BATON_RETURN_IF_ERROR(UpsertEvalInTx(store, row));
    return Status::Ok();
  }));
  stats.records = static_cast<int64_t>(changed.size());
  return stats;
}

}  // namespace baton
