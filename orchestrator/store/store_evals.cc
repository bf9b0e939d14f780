#include "orchestrator/store/store_evals.h"

#include <cmath>

#include "orchestrator/store/record_columns.h"
#include "orchestrator/store/record_json.h"
#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

const ColumnTable<EvalRecord>& EvalTable() {
  using R = EvalRecord;
  static const std::vector<Column<R>> kColumns = {
      Col("run_id", &R::run_id),  // the key is (run_id, step): a later arrival replaces the row
      Col("step", &R::step),
      Col("loss", &R::loss),
      Col("loss_video", &R::loss_video),
      Col("loss_action", &R::loss_action),
      Col("mode", &R::mode),
      Col("episodes", &R::episodes),
      Col("valid_frames", &R::valid_frames),
      Col("seconds", &R::seconds),
      Col("config_hash", &R::config_hash),
      Col("job_id", &R::job_id),
      Col("checkpoint", &R::checkpoint),
      Col("source", &R::source),
      Col("arrived_at", &R::arrived_at),
  };
  static const ColumnTable<R> kTable("evals", kColumns);
  return kTable;
}

// A stored double: the store keeps no NaN (NULL), so the event's is the same "no value".
double Finite(double v) { return std::isfinite(v) ? v : kNoValue; }

bool SameNumber(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

EvalRecord EvalRecordOf(const EvalEvent& e, int64_t run_id, const std::string& source,
                        double arrived_at) {
  EvalRecord r;
  r.run_id = run_id;
  r.step = e.step.value_or(0);
  r.loss = Finite(e.loss);
  r.loss_video = Finite(e.loss_video);
  r.loss_action = Finite(e.loss_action);
  r.mode = e.mode;
  r.episodes = e.episodes;
  r.valid_frames = e.valid_frames;
  r.seconds = Finite(e.seconds);
  r.config_hash = e.config_hash;
  r.job_id = e.job_id;
  r.checkpoint = e.checkpoint;
  r.source = source;
  r.arrived_at = arrived_at;
  return r;
}

bool SameEvalResult(const EvalRecord& a, const EvalRecord& b) {
  return a.run_id == b.run_id && a.step == b.step && SameNumber(a.loss, b.loss) &&
         SameNumber(a.loss_video, b.loss_video) && SameNumber(a.loss_action, b.loss_action) &&
         a.mode == b.mode && a.episodes == b.episodes && a.valid_frames == b.valid_frames &&
         SameNumber(a.seconds, b.seconds) && a.config_hash == b.config_hash &&
         a.job_id == b.job_id && a.checkpoint == b.checkpoint;
}

Status UpsertEvalInTx(Store& store, const EvalRecord& e) {
  static const TableStatement kUpsert = EvalTable().Upsert("run_id, step");
  return EvalTable().Write(StoreInternal::Db(store), kUpsert, e);
}

Result<std::vector<EvalRecord>> ListEvals(Store& store, int64_t run_id) {
  static const std::string kSql = EvalTable().Select("WHERE run_id = ?1 ORDER BY step");
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(kSql));
  s->Bind(1, run_id);
  return EvalTable().ReadAll(*s);
}

std::optional<EvalRecord> BestEval(const std::vector<EvalRecord>& evals) {
  std::optional<EvalRecord> best;
  for (const EvalRecord& e : evals) {
    if (!std::isfinite(e.loss)) continue;
    if (!best || e.loss < best->loss || (e.loss == best->loss && e.step < best->step)) best = e;
  }
  return best;
}

nlohmann::json EvalsJson(const std::vector<EvalRecord>& evals) {
  nlohmann::json out = nlohmann::json::array();
  for (const EvalRecord& e : evals) {
    out.push_back({{"step", e.step},
                   {"metrics",
                    {{"loss", JsonNumber(e.loss)},
                     {"loss_video", JsonNumber(e.loss_video)},
                     {"loss_action", JsonNumber(e.loss_action)}}}});
  }
  return out;
}

}  // namespace baton
