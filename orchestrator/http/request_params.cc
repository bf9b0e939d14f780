#include "orchestrator/http/request_params.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>
#include <string>

namespace baton {

Result<int64_t> IntParam(const httplib::Request& req, const char* name, int64_t fallback,
                         int64_t lo, int64_t hi) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < lo || out > hi) {
    return Status::InvalidArgument(std::string("query parameter ") + name +
                                   " must be an integer in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "] (got '" + v + "')");
  }
  return out;
}

Result<PageRequest> PageParams(const httplib::Request& req, int64_t default_limit) {
  BATON_ASSIGN_OR_RETURN(const int64_t limit,
                         IntParam(req, "limit", default_limit, 1, kMaxPageLimit));
  BATON_ASSIGN_OR_RETURN(const int64_t offset, IntParam(req, "offset", 0, 0, INT64_MAX / 2));
  return PageRequest{limit, offset};
}

// kNotFound when it is not a run id at all.
Result<int64_t> RunIdParam(const httplib::Request& req) {
  const std::string v = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
  int64_t id = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return Status::NotFound("no run with id " + v);
  }
  return id;
}

Result<RunListQuery> RunListParams(const httplib::Request& req) {
  RunListQuery q;
  BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/50));
  q.limit = page.limit;
  q.offset = page.offset;
  if (req.has_param("sort")) {
    std::optional<RunSortKey> key = ParseRunSortKey(req.get_param_value("sort"));
    if (!key) {
      return Status::InvalidArgument("unknown sort key '" + req.get_param_value("sort") +
                                     "' (created, id, name, status, progress, last_loss, "
                                     "last_lr, updated)");
    }
    q.sort = *key;
  }
  if (req.has_param("order")) {
    const std::string o = req.get_param_value("order");
    if (o != "asc" && o != "desc") {
      return Status::InvalidArgument("order must be asc or desc (got '" + o + "')");
    }
    q.descending = o == "desc";
  }
  if (req.has_param("status")) {
    q.status = req.get_param_value("status");
    if (!Find<RunStatus>(q.status)) {
      return Status::InvalidArgument("unknown status '" + q.status + "'");
    }
  }
  if (req.has_param("name")) q.name = req.get_param_value("name");
  if (req.has_param("partition")) q.partition = req.get_param_value("partition");
  if (req.has_param("owner")) q.owner = req.get_param_value("owner");
  if (req.has_param("cluster")) q.cluster = req.get_param_value("cluster");
  if (req.has_param("created_from")) {
    BATON_ASSIGN_OR_RETURN(const int64_t t, IntParam(req, "created_from", 0, 0, INT64_MAX / 2));
    q.created_from = double(t);
  }
  if (req.has_param("created_to")) {
    BATON_ASSIGN_OR_RETURN(const int64_t t, IntParam(req, "created_to", 0, 0, INT64_MAX / 2));
    q.created_to = double(t);
  }
  return q;
}

Result<SeriesRequest> SeriesParams(const httplib::Request& req) {
  SeriesRequest r;
  const std::string keys = req.has_param("keys") ? req.get_param_value("keys") : "lr,loss";
  std::stringstream in(keys);
  std::string key;
  while (std::getline(in, key, ',')) {
    if (key.empty()) continue;
    const std::optional<SeriesKey> k = Find<SeriesKey>(key);
    if (!k) {
      return Status::InvalidArgument("unknown series key '" + key + "' (" + Names<SeriesKey>() +
                                     ")");
    }
    if (std::find(r.keys.begin(), r.keys.end(), *k) == r.keys.end()) r.keys.push_back(*k);
  }
  if (r.keys.empty()) return Status::InvalidArgument("keys must name at least one series");
  BATON_ASSIGN_OR_RETURN(
      r.max_points, IntParam(req, "max_points", r.max_points, kMinSeriesPoints, kMaxSeriesPoints));
  if (req.has_param("superseded")) {
    const std::string v = req.get_param_value("superseded");
    if (v != "0" && v != "1") {
      return Status::InvalidArgument("superseded must be 0 or 1 (got '" + v + "')");
    }
    r.include_superseded = v == "1";
  }
  BATON_ASSIGN_OR_RETURN(r.from_step, IntParam(req, "from", 0, 0, INT64_MAX / 2));
  BATON_ASSIGN_OR_RETURN(r.to_step, IntParam(req, "to", INT64_MAX, 0, INT64_MAX));
  if (r.from_step > r.to_step) {
    return Status::InvalidArgument("from (" + std::to_string(r.from_step) + ") is after to (" +
                                   std::to_string(r.to_step) + ")");
  }
  if (req.has_param("source")) {
    const std::string v = req.get_param_value("source");
    if (v != "auto" && v != "rows") {
      return Status::InvalidArgument("source must be auto or rows (got '" + v + "')");
    }
    r.rows_only = v == "rows";
  }
  return r;
}

Result<bool> WantsCsv(const httplib::Request& req) {
  if (!req.has_param("format")) return false;
  const std::string v = req.get_param_value("format");
  if (v != "json" && v != "csv") {
    return Status::InvalidArgument("format must be json or csv (got '" + v + "')");
  }
  return v == "csv";
}

}  // namespace baton
