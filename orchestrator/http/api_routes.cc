#include "orchestrator/http/api_routes.h"

#include <algorithm>
#include <cstdio>

#include "orchestrator/http/request_params.h"

using nlohmann::json;

namespace baton {

namespace {

// A number as CSV text: integers exactly, others with 17 significant digits; empty for null.
std::string CsvNumber(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v.get<double>());
    return buf;
  }
  return "";
}

// The series answer as CSV: one line per point, effective then superseded, key by key. Keys
// are the server's own names, so no field needs quoting.
std::string SeriesCsv(const json& answer) {
  std::string out = "key,part,step,value,attempt,tokens,wall_s\n";
  for (const char* part : {"series", "superseded"}) {
    if (!answer.contains(part)) continue;
    const char* label = std::string(part) == "series" ? "effective" : "superseded";
    for (const auto& key : answer["keys"]) {
      const json& p = answer[part][key.get<std::string>()];
      const size_t n = p["step"].size();
      for (size_t i = 0; i < n; ++i) {
        out += key.get<std::string>() + "," + label + "," + CsvNumber(p["step"][i]) + "," +
               CsvNumber(p["value"][i]) + "," + CsvNumber(p["attempt"][i]) + "," +
               CsvNumber(p["tokens"][i]) + "," + CsvNumber(p["wall_s"][i]) + "\n";
      }
    }
  }
  return out;
}

}  // namespace

std::vector<ApiRoute> ApiRoutes(RunHistoryService* svc) {
  return {
      {"/api/health",
       "/api/health",
       {},
       [](const httplib::Request&) -> Result<json> {
         return json{{"ok", true}};
       }},
      {"/api/runs",
       "/api/runs",
       {"limit", "offset", "sort", "order", "status", "name", "partition", "owner", "cluster",
        "created_from", "created_to"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const RunListQuery q, RunListParams(req));
         return svc->ListRuns(q);
       }},
      {R"(/api/runs/([^/]+))",
       "/api/runs/{id}",
       {},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         return svc->GetRun(id);
       }},
      {R"(/api/runs/([^/]+)/attempts)",
       "/api/runs/{id}/attempts",
       {"limit", "offset"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/100));
         return svc->ListAttempts(id, page);
       }},
      {R"(/api/runs/([^/]+)/checkpoints)",
       "/api/runs/{id}/checkpoints",
       {"limit", "offset"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/100));
         return svc->ListCheckpoints(id, page);
       }},
      {R"(/api/runs/([^/]+)/actions)",
       "/api/runs/{id}/actions",
       {"limit", "offset"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const PageRequest page, PageParams(req, /*default_limit=*/50));
         return svc->ListActions(id, page);
       }},
      {R"(/api/runs/([^/]+)/incidents)",
       "/api/runs/{id}/incidents",
       {},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         return svc->ListIncidents(id);
       }},
      {R"(/api/runs/([^/]+)/profile)",
       "/api/runs/{id}/profile",
       {},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         return svc->GetProfile(id);
       }},
      {R"(/api/runs/([^/]+)/log)",
       "/api/runs/{id}/log",
       {"attempt", "before", "limit"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         if (!req.has_param("attempt")) {
           return Status::InvalidArgument("attempt (1-based) is required");
         }
         BATON_ASSIGN_OR_RETURN(const int64_t attempt,
                                IntParam(req, "attempt", 1, 1, INT64_MAX / 2));
         LogPageRequest page;
         if (req.has_param("before")) {
           BATON_ASSIGN_OR_RETURN(page.before, IntParam(req, "before", 0, 0, INT64_MAX / 2));
         }
         BATON_ASSIGN_OR_RETURN(page.limit,
                                IntParam(req, "limit", kDefaultLogPageBytes, 1, kMaxLogPageBytes));
         return svc->GetAttemptLog(id, attempt, page);
       }},
      {R"(/api/runs/([^/]+)/series)",
       "/api/runs/{id}/series",
       {"keys", "max_points", "superseded", "from", "to", "source", "format"},
       [svc](const httplib::Request& req) -> Result<json> {
         BATON_ASSIGN_OR_RETURN(const int64_t id, RunIdParam(req));
         BATON_ASSIGN_OR_RETURN(const SeriesRequest r, SeriesParams(req));
         return svc->GetSeries(id, r);
       },
       SeriesCsv},
      {"/api/sweeps",
       "/api/sweeps",
       {},
       [svc](const httplib::Request&) -> Result<json> { return svc->ListSweeps(); }},
      {R"(/api/sweeps/([^/]+))",
       "/api/sweeps/{id}",
       {},
       [svc](const httplib::Request& req) -> Result<json> {
         Result<int64_t> id = RunIdParam(req);
         if (!id.ok()) return Status::NotFound("no sweep with id " + std::string(req.matches[1]));
         return svc->GetSweep(*id);
       }},
      {"/api/nodes",
       "/api/nodes",
       {},
       [svc](const httplib::Request&) -> Result<json> { return svc->GetNodes(); }},
  };
}

Status CheckQueryParams(const httplib::Request& req, const ApiRoute& route, bool token_param) {
  for (auto it = req.params.begin(); it != req.params.end();
       it = req.params.upper_bound(it->first)) {
    const std::string& key = it->first;
    const bool known =
        (token_param && key == "token") ||
        std::find(route.params.begin(), route.params.end(), key) != route.params.end();
    if (!known) {
      std::string takes;
      for (const std::string& p : route.params) takes += (takes.empty() ? "" : ", ") + p;
      return Status::InvalidArgument("unknown query parameter '" + key + "' for " + route.name +
                                     " (it takes " + (takes.empty() ? "none" : takes) + ")");
    }
    if (req.params.count(key) > 1) {
      return Status::InvalidArgument("query parameter '" + key + "' is given more than once");
    }
  }
  return Status::Ok();
}

}  // namespace baton
