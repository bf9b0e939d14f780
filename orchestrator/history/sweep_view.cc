#include "orchestrator/history/sweep_view.h"

#include <cmath>

#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/store_evals.h"
#include "orchestrator/store/time_bucket_store.h"

namespace baton {

namespace {

nlohmann::json Opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

Result<SweepView> BuildSweepView(Store& store, const SweepRecord& sweep) {
  SweepView view;
  view.sweep = sweep;
  const nlohmann::json keys = nlohmann::json::parse(sweep.keys, nullptr, false);
  if (keys.is_array()) {
    for (const nlohmann::json& k : keys) {
      if (k.is_string()) view.keys.push_back(k.get<std::string>());
    }
  }
  BATON_ASSIGN_OR_RETURN(const std::vector<SweepMemberRecord> members,
                         ListSweepMembers(store, sweep.id));
  for (const SweepMemberRecord& m : members) {
    SweepMemberView v;
    v.index = m.index;
    v.run_id = m.run_id;
    v.values = nlohmann::json::parse(m.values, nullptr, false);
    if (v.values.is_discarded()) v.values = nlohmann::json::object();
    BATON_ASSIGN_OR_RETURN(const RunSummary s, GetRunSummary(store, m.run_id));
    v.name = s.run.name;
    v.job_id = s.run.job_id;
    v.status = Name(s.run.status);
    v.reason = s.run.reason;
    v.last_step = s.last_step;
    v.target_steps = s.run.target_steps;
    if (std::isfinite(s.last_loss)) v.final_loss = s.last_loss;
    v.restarts = s.attempts > 0 ? s.attempts - 1 : 0;
    BATON_ASSIGN_OR_RETURN(const std::optional<RunTimeBuckets> buckets,
                           ReadTimeBuckets(store, m.run_id));
    if (buckets) v.ettr = Ettr(buckets->run);
    BATON_ASSIGN_OR_RETURN(const std::vector<EvalRecord> evals, ListEvals(store, m.run_id));
    if (const std::optional<EvalRecord> best = BestEval(evals)) {
      v.best_eval_loss = best->loss;
      v.best_eval_step = best->step;
    }
    ++view.counts[v.status];
    view.members.push_back(std::move(v));
  }
  return view;
}

nlohmann::json SweepViewJson(const SweepView& view) {
  nlohmann::json members = nlohmann::json::array();
  for (const SweepMemberView& m : view.members) {
    members.push_back({{"index", m.index},
                       {"run_id", m.run_id},
                       {"name", m.name},
                       {"job_id", m.job_id},
                       {"values", m.values},
                       {"status", m.status},
                       {"reason", m.reason},
                       {"last_step", m.last_step ? nlohmann::json(*m.last_step) : nullptr},
                       {"target_steps", m.target_steps},
                       {"final_loss", Opt(m.final_loss)},
                       {"ettr", Opt(m.ettr)},
                       {"restarts", m.restarts},
                       {"best_eval_loss", Opt(m.best_eval_loss)},
                       {"best_eval_step", m.best_eval_step ? nlohmann::json(*m.best_eval_step)
                                                           : nlohmann::json(nullptr)}});
  }
  return {{"sweep_id", view.sweep.id},
          {"name", view.sweep.name},
          {"job_id", view.sweep.job_id},
          {"sweep_dir", view.sweep.sweep_dir},
          {"max_parallel", view.sweep.max_parallel},
          {"cancelled", view.sweep.cancelled},
          {"created_at", view.sweep.created_at},
          {"keys", view.keys},
          {"counts", view.counts},
          {"members", members}};
}

}  // namespace baton
