#include "orchestrator/nodes/incident_file.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "orchestrator/nodes/host_name.h"
#include "orchestrator/nodes/log_patterns.h"
#include "schema/atomic_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton {

namespace {

bool Word(const std::string& s, bool allow_dash) {
  constexpr size_t kMaxWordBytes = 64;
  if (s.empty() || s.size() > kMaxWordBytes) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || (allow_dash && c == '-');
    if (!ok) return false;
  }
  return true;
}

Status Check(const NodeIncidentReport& r) {
  if (!ValidHostName(r.host))
    return Status::InvalidArgument("'" + r.host.substr(0, 80) + "' is not a valid host name");
  if (!Word(r.kind, false) || !Word(r.source, false))
    return Status::InvalidArgument("kind '" + r.kind + "' / source '" + r.source +
                                   "' is not a word");
  if (!Word(r.job_id, true)) return Status::InvalidArgument("job id '" + r.job_id + "' is bad");
  if (r.restart_count < 0 || r.in_job_seq < 0 || r.rank < -1 || !std::isfinite(r.at) || r.at <= 0)
    return Status::InvalidArgument("a number is out of range");
  return Status::Ok();
}

}  // namespace

std::string NodeIncidentDir(const std::string& run_dir) { return run_dir + "/nodes"; }

Status WriteNodeIncident(const std::string& run_dir, const NodeIncidentReport& r) {
  BATON_RETURN_IF_ERROR(Check(r));
  const std::string dir = NodeIncidentDir(run_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Io("cannot create " + dir + ": " + ec.message());
  const json j = {{"job_id", r.job_id},
                  {"restart_count", r.restart_count},
                  {"in_job_seq", r.in_job_seq},
                  {"rank", r.rank},
                  {"host", r.host},
                  {"kind", r.kind},
                  {"source", r.source},
                  {"evidence", r.evidence.substr(0, kMaxEvidenceBytes)},
                  {"at", r.at}};
  const std::string name = "incident-" + r.job_id + "." + std::to_string(r.restart_count) + "." +
                           std::to_string(r.in_job_seq) + "." + r.host + "." + r.kind + ".json";
  return WriteTextAtomic(dir + "/" + name, j.dump() + "\n");
}

NodeIncidentFiles ReadNodeIncidents(const std::string& run_dir) {
  NodeIncidentFiles out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(NodeIncidentDir(run_dir), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("incident-", 0) != 0 || e.path().extension() != ".json") continue;
    std::error_code e2;
    if (!e.is_regular_file(e2) || e.file_size(e2) > uintmax_t(kMaxIncidentFileBytes)) {
      out.refused.push_back(name + ": not a regular file under 16 KiB");
      continue;
    }
    Result<std::string> text = ReadFile(e.path().string());
    if (!text.ok()) {
      out.refused.push_back(name + ": " + text.status().message());
      continue;
    }
    NodeIncidentReport r;
    try {
      const json j = json::parse(*text);
      r.job_id = j.at("job_id").get<std::string>();
      r.restart_count = j.at("restart_count").get<int64_t>();
      r.in_job_seq = j.at("in_job_seq").get<int64_t>();
      r.rank = j.at("rank").get<int64_t>();
      r.host = j.at("host").get<std::string>();
      r.kind = j.at("kind").get<std::string>();
      r.source = j.at("source").get<std::string>();
      r.evidence = j.at("evidence").get<std::string>().substr(0, kMaxEvidenceBytes);
      r.at = j.at("at").get<double>();
    } catch (const json::exception& x) {
      out.refused.push_back(name + ": " + x.what());
      continue;
    }
    if (Status st = Check(r); !st.ok()) {
      out.refused.push_back(name + ": " + st.message());
      continue;
    }
    out.incidents.push_back(std::move(r));
  }
  return out;
}

}  // namespace baton
