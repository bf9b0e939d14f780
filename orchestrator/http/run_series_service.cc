// RunHistoryService::GetSeries: a run's chart series, from its rollups when they cover the run
// (store/series_rollup_reader.h) and from its rows otherwise (series_downsampler.h). Both paths
// take their values from the store's one series rule (store/series_values.h) and answer the same
// points; `source` says which one did.
#include <algorithm>
#include <cmath>
#include <map>

#include "orchestrator/history/run_timeline.h"
#include "orchestrator/http/run_history_service.h"
#include "orchestrator/http/series_downsampler.h"
#include "orchestrator/store/series_rollup_reader.h"

using nlohmann::json;

namespace baton {

namespace {

// Downsamples the rows `rows` (indices into `all`, grouped by attempt) of one key into
// {step, value, attempt, tokens, wall_s} arrays.
json SeriesPart(const std::vector<SeriesRow>& all, const std::vector<size_t>& rows, SeriesKey key,
                const ExpectedSchedule& schedule, size_t max_points,
                const std::map<int64_t, int>& attempt_index,
                const std::vector<int64_t>& tokens_seen, double t0) {
  std::vector<int64_t> step(rows.size()), segment(rows.size());
  std::vector<double> value(rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    const SeriesRow& r = all[rows[k]];
    step[k] = r.step;
    segment[k] = r.attempt_id;
    value[k] = SeriesValue(key, r, schedule);
  }
  const std::vector<size_t> keep = DownsampleMinMax(step, value, segment, max_points);
  json steps = json::array(), values = json::array(), attempts = json::array(),
       tokens = json::array(), wall = json::array();
  for (size_t k : keep) {
    const size_t i = rows[k];
    steps.push_back(step[k]);
    values.push_back(value[k]);
    auto it = attempt_index.find(segment[k]);
    attempts.push_back(it == attempt_index.end() ? 0 : it->second);
    tokens.push_back(tokens_seen[i]);
    wall.push_back(all[i].time - t0);
  }
  return json{
      {"rows", rows.size()},        {"points", keep.size()},          {"step", std::move(steps)},
      {"value", std::move(values)}, {"attempt", std::move(attempts)}, {"tokens", std::move(tokens)},
      {"wall_s", std::move(wall)}};
}

// Skipped steps of the effective series as ranges of consecutive steps [first, last], for
// markers on the charts (step indices; the UI maps them onto its x axis like the boundaries).
// Steps arrive in order; past kMaxNonfiniteRanges ranges only the last one may still grow.
struct NonfiniteRanges {
  json ranges = json::array();
  int64_t steps = 0;
  bool closed = false;  // a step was dropped: no later step can extend the last range
  void Add(int64_t step) {
    ++steps;
    if (!ranges.empty() && !closed && ranges.back()[1].get<int64_t>() + 1 == step) {
      ranges.back()[1] = step;
    } else if (ranges.size() < kMaxNonfiniteRanges) {
      ranges.push_back(json::array({step, step}));
    } else {
      closed = true;
    }
  }
  json Json() const { return json{{"steps", steps}, {"ranges", ranges}}; }
};

json KeyNames(const std::vector<SeriesKey>& keys) {
  json out = json::array();
  for (SeriesKey k : keys) out.push_back(Name(k));
  return out;
}

// One part of a series answer from kept points.
json PointsJson(const std::vector<SeriesOutPoint>& points, size_t rows,
                const std::map<int64_t, int>& attempt_index, double t0) {
  json steps = json::array(), values = json::array(), attempts = json::array(),
       tokens = json::array(), wall = json::array();
  for (const SeriesOutPoint& p : points) {
    steps.push_back(p.step);
    values.push_back(p.value);
    auto it = attempt_index.find(p.attempt_id);
    attempts.push_back(it == attempt_index.end() ? 0 : it->second);
    tokens.push_back(p.tokens_seen);
    wall.push_back(p.time - t0);
  }
  return json{{"rows", rows},
              {"points", points.size()},
              {"step", std::move(steps)},
              {"value", std::move(values)},
              {"attempt", std::move(attempts)},
              {"tokens", std::move(tokens)},
              {"wall_s", std::move(wall)}};
}

// The series answer from the run's rollups: the same points as the row path, read per cell.
Result<json> RollupSeries(Store& store, RollupSeriesReader& reader, int64_t run_id,
                          const SeriesRequest& req, const std::map<int64_t, int>& attempt_index,
                          std::optional<double> first_start) {
  // Wall time counts from the earliest row the answer covers (as the row path).
  double t0 = reader.min_time();
  if (req.include_superseded) t0 = std::min(t0, reader.superseded_min_time());
  if (!std::isfinite(t0)) t0 = 0.0;  // no rows at all (as the row path)
  if (first_start) t0 = std::min(t0, *first_start);

  json series = json::object(), faint = json::object();
  int64_t rows = 0, faint_rows = 0;
  std::vector<SeriesOutPoint> points;
  for (SeriesKey key : req.keys) {
    const char* name = Name(key);
    BATON_RETURN_IF_ERROR(
        reader.Points(key, req.from_step, req.to_step, size_t(req.max_points), &points, &rows));
    series[name] = PointsJson(points, size_t(rows), attempt_index, t0);
    if (!req.include_superseded) continue;
    BATON_RETURN_IF_ERROR(reader.SupersededPoints(key, req.from_step, req.to_step,
                                                  size_t(req.max_points), &points, &faint_rows));
    faint[name] = PointsJson(points, size_t(faint_rows), attempt_index, t0);
  }
  NonfiniteRanges nonfinite;
  BATON_ASSIGN_OR_RETURN(const std::vector<int64_t> skipped,
                         ReadEffectiveNonfiniteSteps(store, run_id, req.from_step, req.to_step));
  for (int64_t step : skipped) nonfinite.Add(step);
  json out{{"run_id", run_id},
           {"keys", KeyNames(req.keys)},
           {"max_points", req.max_points},
           {"source", "rollups"},
           {"rows", rows},
           {"superseded_rows", faint_rows},
           {"nonfinite", nonfinite.Json()},
           {"series", std::move(series)}};
  if (req.include_superseded) out["superseded"] = std::move(faint);
  return out;
}

}  // namespace

Result<json> RunHistoryService::GetSeries(int64_t run_id, const SeriesRequest& req) {
  BATON_ASSIGN_OR_RETURN(StorePool::Lease lease, pool_->Acquire());
  Store& store = lease.store();
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(run_id));
  const ExpectedSchedule schedule = ScheduleFromConfig(run.config);
  BATON_ASSIGN_OR_RETURN(const std::vector<AttemptRecord> attempts, store.ListAttempts(run_id));
  std::map<int64_t, int> attempt_index;
  for (size_t i = 0; i < attempts.size(); ++i) attempt_index[attempts[i].id] = int(i + 1);
  const std::optional<double> first_start =
      attempts.empty() ? std::nullopt : attempts.front().started_at;
  if (!req.rows_only) {
    RollupSeriesReader reader(store, run_id, schedule);
    BATON_RETURN_IF_ERROR(reader.Load());
    if (reader.usable()) {
      return RollupSeries(store, reader, run_id, req, attempt_index, first_start);
    }
  }
  BATON_ASSIGN_OR_RETURN(const std::vector<SeriesRow> c,
                         ReadSeriesRows(store, run_id, req.include_superseded));

  std::vector<size_t> effective, superseded;
  for (size_t i = 0; i < c.size(); ++i) (c[i].superseded ? superseded : effective).push_back(i);
  // The effective rows are in step order (each attempt's effective range starts where the
  // previous one's ends), so "tokens seen" is their running sum; a superseded row reuses the
  // effective figure at its step (an exact resume re-reads the same batches).
  std::sort(effective.begin(), effective.end(),
            [&](size_t a, size_t b) { return c[a].step < c[b].step; });
  std::vector<int64_t> tokens_seen(c.size(), 0);
  int64_t sum = 0;
  for (size_t i : effective) tokens_seen[i] = (sum += c[i].tokens);
  for (size_t i : superseded) {
    auto it = std::lower_bound(effective.begin(), effective.end(), c[i].step,
                               [&](size_t e, int64_t s) { return c[e].step < s; });
    tokens_seen[i] = it != effective.end() ? tokens_seen[*it] : sum;
  }
  // Wall time counts from the first attempt's start (holds between attempts show as gaps).
  double t0 = c.empty() ? 0.0 : c.front().time;
  for (const SeriesRow& r : c) t0 = std::min(t0, r.time);
  if (first_start) t0 = std::min(t0, *first_start);
  // Grouped by attempt again for the downsampler (its segments must be contiguous).
  std::stable_sort(superseded.begin(), superseded.end(),
                   [&](size_t a, size_t b) { return c[a].attempt_id < c[b].attempt_id; });
  // The zoom's range (the running sums above still count from the run's start).
  auto outside = [&](size_t i) { return c[i].step < req.from_step || c[i].step > req.to_step; };
  effective.erase(std::remove_if(effective.begin(), effective.end(), outside), effective.end());
  superseded.erase(std::remove_if(superseded.begin(), superseded.end(), outside), superseded.end());

  json series = json::object(), faint = json::object();
  for (SeriesKey key : req.keys) {
    series[Name(key)] = SeriesPart(c, effective, key, schedule, size_t(req.max_points),
                                   attempt_index, tokens_seen, t0);
    if (req.include_superseded) {
      faint[Name(key)] = SeriesPart(c, superseded, key, schedule, size_t(req.max_points),
                                    attempt_index, tokens_seen, t0);
    }
  }
  NonfiniteRanges nonfinite;
  for (size_t i : effective) {
    if (c[i].nonfinite) nonfinite.Add(c[i].step);
  }
  json out{{"run_id", run_id},
           {"keys", KeyNames(req.keys)},
           {"max_points", req.max_points},
           {"source", "rows"},
           {"rows", effective.size()},
           {"superseded_rows", superseded.size()},
           {"nonfinite", nonfinite.Json()},
           {"series", std::move(series)}};
  if (req.include_superseded) out["superseded"] = std::move(faint);
  return out;
}

}  // namespace baton
