// RunHistoryService: the JSON the web API answers with, built from the store's read queries —
// the middle of routes → service → store. Knows nothing about HTTP (the routes parse requests
// and map a failed Status to the one error shape); never throws (nlohmann::json building only
// throws on invalid UTF-8, which the routes' boundary catches).
//
// Owns nothing but a StorePool pointer and a clock; each call leases its own read connection.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/history/attempt_log.h"
#include "orchestrator/http/store_pool.h"
#include "orchestrator/store/run_history_queries.h"
#include "orchestrator/store/series_values.h"
#include "schema/status.h"

namespace baton {

struct PageRequest {
  int64_t limit = 100;
  int64_t offset = 0;
};
// Largest page any list endpoint returns.
inline constexpr int64_t kMaxPageLimit = 1000;

struct SeriesRequest {
  std::vector<SeriesKey> keys;
  int64_t max_points = 2000;  // per key and per part (effective / superseded)
  bool include_superseded = false;
  // Zoom: only steps in [from_step, to_step] (a range at full resolution when it holds at most
  // max_points rows). "Tokens seen" and wall time still count from the run's start.
  int64_t from_step = 0;
  int64_t to_step = INT64_MAX;
  // Read the rows even when the run's rollups could answer (the old path; bench and tests).
  bool rows_only = false;
};
// Bounds of max_points (points per key).
inline constexpr int64_t kMinSeriesPoints = 16;
inline constexpr int64_t kMaxSeriesPoints = 200000;
// Non-finite (skipped) steps listed by GetRun, the first ones in step order; the count is exact.
inline constexpr int64_t kMaxListedNonfiniteSteps = 100;
// Ranges of consecutive non-finite steps the series carries for the charts' markers.
inline constexpr size_t kMaxNonfiniteRanges = 1000;

class RunHistoryService {
 public:
  using Clock = std::function<double()>;  // Unix seconds (wall time of live runs)
  RunHistoryService(StorePool* pool, Clock now) : pool_(pool), now_(std::move(now)) {}

  [[nodiscard]] Result<nlohmann::json> ListRuns(const RunListQuery& q);
  [[nodiscard]] Result<nlohmann::json> GetRun(int64_t run_id);
  [[nodiscard]] Result<nlohmann::json> ListAttempts(int64_t run_id, const PageRequest& page);
  [[nodiscard]] Result<nlohmann::json> ListCheckpoints(int64_t run_id, const PageRequest& page);
  // The audit of write actions on the run, newest first (run_audit_service.cc).
  [[nodiscard]] Result<nlohmann::json> ListActions(int64_t run_id, const PageRequest& page);
  // The run's incidents with their alert deliveries, newest first (run_incidents_service.cc).
  [[nodiscard]] Result<nlohmann::json> ListIncidents(int64_t run_id);
  // Whether the server answers the write routes (--auth): ListActions says so to the run page.
  void set_write_actions(bool on) { write_actions_ = on; }
  // run_series_service.cc
  [[nodiscard]] Result<nlohmann::json> GetSeries(int64_t run_id, const SeriesRequest& req);
  // The microstep profile per step and per attempt (run_profile.h).
  [[nodiscard]] Result<nlohmann::json> GetProfile(int64_t run_id);
  // A page of attempt `attempt`'s (1-based) log file, read backwards from its end.
  [[nodiscard]] Result<nlohmann::json> GetAttemptLog(int64_t run_id, int64_t attempt,
                                                     const LogPageRequest& req);
  // sweep_service.cc: the sweeps, newest first, with status counts; one sweep with its members.
  [[nodiscard]] Result<nlohmann::json> ListSweeps();
  [[nodiscard]] Result<nlohmann::json> GetSweep(int64_t sweep_id);
  // node_service.cc: every node of the ledger with its incidents, exclusion and audit.
  [[nodiscard]] Result<nlohmann::json> GetNodes();

 private:
  StorePool* pool_;
  Clock now_;
  bool write_actions_ = false;  // set before serving
};

}  // namespace baton
