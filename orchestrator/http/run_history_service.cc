#include "orchestrator/http/run_history_service.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "orchestrator/history/run_timeline.h"
#include "orchestrator/http/run_profile.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/store/record_json.h"
#include "orchestrator/store/stop_save_summary.h"
#include "orchestrator/store/store_evals.h"
#include "orchestrator/store/time_bucket_store.h"
#include "orchestrator/store/time_buckets_json.h"
#include "schema/padding_waste.h"
#include "schema/step_numbers.h"

using nlohmann::json;

namespace baton {

namespace {

bool IsLive(RunStatus s) { return !IsTerminal(s); }

// Seconds from the first attempt's start to the last attempt's end (now while one is open).
std::optional<double> WallSeconds(const RunSummary& r, double now) {
  if (!r.first_started_at) return std::nullopt;
  double end = r.has_open_attempt || !r.last_ended_at ? now : *r.last_ended_at;
  if (IsTerminal(r.run.status) && r.last_ended_at) end = *r.last_ended_at;
  return std::max(0.0, end - *r.first_started_at);
}

// The run as the runs table shows it: the record's JSON (record_json.h, as the CLI's) without
// the restart budgets, which the API has never published, plus progress figures.
json SummaryJson(const RunSummary& r, double now) {
  json restarts = json::array();
  for (const AttemptBrief& a : r.attempt_list) {
    restarts.push_back({{"job_id", a.job_id},
                        {"restart_count", a.restart_count},
                        {"end_reason", JsonTextOrNull(a.end_reason)},
                        {"step0", JsonNumber(a.step0)},
                        {"last_step", JsonNumber(a.last_step)}});
  }
  const std::optional<int64_t> restart_count =
      r.attempt_list.empty() ? std::nullopt
                             : std::optional<int64_t>(r.attempt_list.back().restart_count);
  std::optional<double> checkpoint_age;
  if (r.last_checkpoint_time) checkpoint_age = std::max(0.0, now - *r.last_checkpoint_time);
  // Steps finished = last step index + 1 (step indices are 0-based, docs/events.md).
  const int64_t done = r.last_step ? *r.last_step + 1 : 0;
  json out = WithoutKeys(RunJson(r.run), {"max_restarts", "max_failures"});
  out.update(
      json{{"live", IsLive(r.run.status)},
           {"attempt", r.attempts},
           {"restart_count", JsonNumber(restart_count)},
           {"restarts", std::max<int64_t>(0, r.attempts - 1)},
           {"attempts", restarts},
           {"last_step", JsonNumber(r.last_step)},
           {"steps_done", done},
           {"progress", r.run.target_steps > 0
                            ? JsonNumber(std::min(1.0, double(done) / double(r.run.target_steps)))
                            : json(nullptr)},
           {"last_loss", JsonNumber(r.last_loss)},
           {"last_lr", JsonNumber(r.last_lr)},
           {"last_step_time", JsonNumber(r.last_step_time)},
           {"last_checkpoint_step", JsonNumber(r.last_checkpoint_step)},
           {"last_checkpoint_time", JsonNumber(r.last_checkpoint_time)},
           {"last_checkpoint_age_s", JsonNumber(checkpoint_age)},
           {"started_at", JsonNumber(r.first_started_at)},
           {"wall_s", JsonNumber(WallSeconds(r, now))}});
  return out;
}

json PageJson(const PageRequest& p, int64_t total) {
  return {{"limit", p.limit}, {"offset", p.offset}, {"total", total}};
}

// One attempt: the record's JSON (record_json.h, as the CLI's) with the timeline's numbering
// (1-based), step0 and warmup range, and the summary of its step rows. The ranges a person
// reads are step numbers (schema/step_numbers.h), as the CLI's STEPS and WARMUP columns.
json SegmentJson(const TimelineSegment& s) {
  const AttemptRecord& a = s.attempt;
  const AttemptStepStats& st = s.stats;
  const double tokens_per_s =
      st.step_time_s > 0 ? double(st.tokens) / st.step_time_s : std::nan("");
  const double s_per_step =
      st.effective_steps > 0 ? st.step_time_s / double(st.effective_steps) : std::nan("");
  const double padding = PaddingWaste(double(st.tokens), double(st.padded_tokens));
  // The warmup as step numbers for the tables; warmup_from/until stay the index bounds the
  // charts shade.
  std::optional<int64_t> warmup_first, warmup_last;
  if (s.warmup_from && s.warmup_until) {
    const StepNumberRange w = StepNumbersOf(*s.warmup_from, *s.warmup_until);
    if (!w.empty()) warmup_first = w.first, warmup_last = w.last;
  }
  json out = AttemptJson(a);
  const std::optional<SlurmStateKind> slurm_kind = ClassifySlurmState(a);
  out.update(json{{"attempt", s.index},
                  {"slurm_state_kind", slurm_kind ? json(Name(*slurm_kind)) : json(nullptr)},
                  {"label", s.label},
                  {"step0", s.step0},
                  {"effective_first_step", JsonNumber(StepNumber(st.first_step))},
                  {"effective_last_step", JsonNumber(StepNumber(st.last_step))},
                  {"warmup_first_step", JsonNumber(warmup_first)},
                  {"warmup_last_step", JsonNumber(warmup_last)},
                  {"warmup_from", JsonNumber(s.warmup_from)},
                  {"warmup_until", JsonNumber(s.warmup_until)},
                  {"warmup_kind", JsonTextOrNull(s.warmup_kind)},
                  {"duration_s", JsonNumber(s.duration_s)},
                  {"summary",
                   {{"effective_steps", st.effective_steps},
                    {"superseded_steps", st.superseded_steps},
                    {"warmup_steps", st.warmup_steps},
                    {"nonfinite_steps", st.nonfinite_steps},
                    {"tokens", st.tokens},
                    {"tokens_per_s", JsonNumber(tokens_per_s)},
                    {"s_per_step", JsonNumber(s_per_step)},
                    {"padding_waste", JsonNumber(padding)}}}});
  return out;
}

json AuditJson(const RunAudit& a) {
  return json{{"attempts", a.attempts},
              {"effective_steps", a.effective_steps},
              {"warmup_steps", a.warmup_steps},
              {"warmup_fraction", JsonNumber(a.warmup_fraction)},
              {"nonfinite_steps", a.nonfinite_steps},
              {"expected_warmup_steps", JsonNumber(a.expected_warmup_steps)},
              {"steps_redone", a.steps_redone},
              {"redone_compute_s", JsonNumber(a.redone_compute_s)},
              {"requeue_hold_s", JsonNumber(a.requeue_hold_s)}};
}

// The run's timeline from one read connection.
struct RunTimelineData {
  RunSummary summary;
  ExpectedSchedule schedule;
  std::vector<TimelineSegment> segments;
};

Result<RunTimelineData> LoadTimeline(Store& store, int64_t run_id) {
  RunTimelineData d;
  BATON_ASSIGN_OR_RETURN(d.summary, GetRunSummary(store, run_id));
  d.schedule = ScheduleFromConfig(d.summary.run.config);
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run_id));
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptStepStats> stats,
                         ReadAttemptStepStats(store, run_id));
  d.segments = BuildTimeline(attempts, stats, d.schedule);
  return d;
}

// The skipped (non-finite) steps of the run: exact counts and the first ones, effective only.
Result<json> NonfiniteJson(Store& store, int64_t run_id,
                           const std::vector<TimelineSegment>& segments) {
  BATON_ASSIGN_OR_RETURN(const NonfiniteCounts counts, store.CountNonfiniteSteps(run_id));
  BATON_ASSIGN_OR_RETURN(
      const std::vector<StepRecord> rows,
      store.ListNonfiniteSteps(run_id, /*include_superseded=*/false, kMaxListedNonfiniteSteps));
  std::map<int64_t, int> attempt_index;
  for (const TimelineSegment& s : segments) attempt_index[s.attempt.id] = s.index;
  json listed = json::array();
  for (const StepRecord& r : rows) {
    auto it = attempt_index.find(r.attempt_id);
    json step = NonfiniteStepJson(r, it == attempt_index.end() ? 0 : it->second);
    step["step_number"] = StepNumber(r.step);  // what the page's table shows, as the CLI's text
    listed.push_back(std::move(step));
  }
  return json{{"steps", counts.effective},
              {"superseded", counts.superseded},
              {"listed", std::move(listed)}};
}

}  // namespace

Result<json> RunHistoryService::ListRuns(const RunListQuery& q) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  BATON_ASSIGN_OR_RETURN(const RunSummaryPage page, ListRunSummaries(lease.store(), q));
  const double now = now_();
  json runs = json::array();
  for (const RunSummary& r : page.runs) runs.push_back(SummaryJson(r, now));
  return json{
      {"runs", std::move(runs)}, {"page", PageJson({q.limit, q.offset}, page.total)}, {"now", now}};
}

Result<json> RunHistoryService::GetRun(int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  BATON_ASSIGN_OR_RETURN(const RunTimelineData d, LoadTimeline(lease.store(), run_id));
  const double now = now_();
  json out = SummaryJson(d.summary, now);
  out["config"] = d.summary.run.config;
  out["config_keys"] = FlattenConfig(d.summary.run.config);
  out["schedule"] = d.schedule.known ? json{{"base_lr", d.schedule.base_lr},
                                            {"warmup_steps", d.schedule.warmup_steps},
                                            {"resume_warmup_steps", d.schedule.resume_warmup_steps}}
                                     : json(nullptr);
  json segments = json::array();
  for (const TimelineSegment& s : d.segments) segments.push_back(SegmentJson(s));
  out["segments"] = std::move(segments);
  out["audit"] = AuditJson(BuildAudit(d.segments, d.schedule));
  BATON_ASSIGN_OR_RETURN(out["nonfinite"], NonfiniteJson(lease.store(), run_id, d.segments));
  BATON_ASSIGN_OR_RETURN(const StopSaveSummary stop_save,
                         ReadStopSaveSummary(lease.store(), run_id));
  out["stop_save"] = StopSaveJson(stop_save);
  BATON_ASSIGN_OR_RETURN(const RunTimeBuckets time,
                         TimeBucketsOf(lease.store(), d.summary.run, now));
  out["time"] = TimeBucketsJson(time, /*first_attempt=*/AttemptNumber(0));
  BATON_ASSIGN_OR_RETURN(const std::vector<EvalRecord> evals, ListEvals(lease.store(), run_id));
  out["evals"] = EvalsJson(evals);
  out["now"] = now;
  return out;
}

Result<json> RunHistoryService::ListAttempts(int64_t run_id, const PageRequest& page) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  BATON_ASSIGN_OR_RETURN(const RunTimelineData d, LoadTimeline(lease.store(), run_id));
  json items = json::array();
  const int64_t total = static_cast<int64_t>(d.segments.size());
  for (int64_t i = page.offset; i < total && i < page.offset + page.limit; ++i) {
    items.push_back(SegmentJson(d.segments[static_cast<size_t>(i)]));
  }
  return json{{"run_id", run_id}, {"attempts", std::move(items)}, {"page", PageJson(page, total)}};
}

Result<json> RunHistoryService::ListCheckpoints(int64_t run_id, const PageRequest& page) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  Store& store = lease.store();
  BATON_RETURN_IF_ERROR(store.GetRun(run_id).status());  // 404 for an unknown run
  BATON_ASSIGN_OR_RETURN(const std::vector<CheckpointRecord> all, store.ListCheckpoints(run_id));
  json items = json::array();
  const int64_t total = static_cast<int64_t>(all.size());
  for (int64_t i = page.offset; i < total && i < page.offset + page.limit; ++i) {
    items.push_back(CheckpointJson(all[static_cast<size_t>(i)]));
  }
  return json{
      {"run_id", run_id}, {"checkpoints", std::move(items)}, {"page", PageJson(page, total)}};
}

Result<json> RunHistoryService::GetProfile(int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  Store& store = lease.store();
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_id));  // 404 for an unknown run
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run_id));
  std::map<int64_t, int> attempt_index;
  for (size_t i = 0; i < attempts.size(); ++i) attempt_index[attempts[i].id] = int(i + 1);
  BATON_ASSIGN_OR_RETURN(const std::vector<MicrostepRecord> micro, store.ListMicrosteps(run_id));
  json out = ProfileJson(micro, attempt_index, ProfileModelFromConfig(run.config));
  out["run_id"] = run_id;
  return out;
}

Result<json> RunHistoryService::GetAttemptLog(int64_t run_id, int64_t attempt,
                                              const LogPageRequest& req) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  Store& store = lease.store();
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_id));
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run_id));
  if (attempt < 1 || attempt > static_cast<int64_t>(attempts.size())) {
    return Status::NotFound("run " + std::to_string(run_id) + " has no attempt " +
                            std::to_string(attempt) + " (it has " +
                            std::to_string(attempts.size()) + ")");
  }
  // The database connection is not needed for the file: give it back first.
  const AttemptRecord a = attempts[static_cast<size_t>(attempt - 1)];
  ReleaseReadSnapshot(store);
  BATON_ASSIGN_OR_RETURN(json page, ReadAttemptLogPage(run.run_dir, a, req));
  page["run_id"] = run_id;
  page["attempt"] = attempt;
  page["job_id"] = a.job_id;
  page["restart_count"] = a.restart_count;
  return page;
}

}  // namespace baton
