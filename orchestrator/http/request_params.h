// The API's request parameters: the query string (and the run id of the path) of each route
// read into the service's request types, or kInvalidArgument naming the parameter, its allowed
// values and what was given (docs/http_api.md). A run id that is not a number is kNotFound, like
// a run that does not exist. Pure functions over the request; thread-safe.
#pragma once

#include <httplib.h>

#include <cstdint>

#include "orchestrator/http/run_history_service.h"
#include "schema/status.h"

namespace baton {

// An integer query parameter in [lo, hi]; `fallback` when absent.
[[nodiscard]] Result<int64_t> IntParam(const httplib::Request& req, const char* name,
                                       int64_t fallback, int64_t lo, int64_t hi);
// ?limit (1..kMaxPageLimit, default `default_limit`) and ?offset.
[[nodiscard]] Result<PageRequest> PageParams(const httplib::Request& req, int64_t default_limit);
// The {id} of /api/runs/{id}/...
[[nodiscard]] Result<int64_t> RunIdParam(const httplib::Request& req);
// /api/runs: paging, sort, order and the filters.
[[nodiscard]] Result<RunListQuery> RunListParams(const httplib::Request& req);
// /api/runs/{id}/series: keys (default lr,loss), max_points, superseded, from, to, source.
[[nodiscard]] Result<SeriesRequest> SeriesParams(const httplib::Request& req);
// ?format=json (default, false) or csv (true).
[[nodiscard]] Result<bool> WantsCsv(const httplib::Request& req);

}  // namespace baton
