#include "orchestrator/nodes/node_report.h"

#include "orchestrator/nodes/node_policy.h"

namespace baton {

std::string NodeStatusText(const NodeRecord& n, double now) {
  if (ExcludedAt(n, now))
    return n.excluded_by == "auto" ? "excluded" : "excluded by " + n.excluded_by;
  if (n.probation_until && now < *n.probation_until) return "probation";
  return "ok";
}

Result<nlohmann::json> NodeReportJson(Store& store, const NodeRecord& n, double now) {
  nlohmann::json j{{"host", n.key.host},
                   {"cluster", n.key.cluster},
                   {"partition", n.key.partition},
                   {"status", NodeStatusText(n, now)},
                   {"excluded", ExcludedAt(n, now)},
                   {"excluded_by", n.excluded_by},
                   {"reason", n.exclusion_reason}};
  j["excluded_until"] = ExcludedAt(n, now) ? nlohmann::json(*n.excluded_until) : nlohmann::json();
  j["probation_until"] = n.probation_until && now < *n.probation_until
                             ? nlohmann::json(*n.probation_until)
                             : nlohmann::json();
  nlohmann::json incidents = nlohmann::json::array(), actions = nlohmann::json::array();
  BATON_ASSIGN_OR_RETURN(const std::vector<NodeIncidentRecord> found,
                         ListNodeIncidents(store, n.id));
  for (const NodeIncidentRecord& i : found) {
    incidents.push_back({{"run_id", i.run_id},
                         {"job_id", i.job_id},
                         {"restart_count", i.restart_count},
                         {"in_job_seq", i.in_job_seq},
                         {"rank", i.rank},
                         {"kind", i.kind},
                         {"source", i.source},
                         {"evidence", i.evidence},
                         {"at", i.at}});
  }
  BATON_ASSIGN_OR_RETURN(const std::vector<NodeActionRecord> done, ListNodeActions(store, n.id));
  for (const NodeActionRecord& a : done) {
    actions.push_back(
        {{"user", a.user}, {"action", a.action}, {"at", a.asked_at}, {"message", a.message}});
  }
  j["incidents"] = std::move(incidents);
  j["actions"] = std::move(actions);
  return j;
}

Result<nlohmann::json> NodeReport(Store& store, double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<NodeRecord> nodes, ListNodes(store));
  nlohmann::json all = nlohmann::json::array();
  for (const NodeRecord& n : nodes) {
    BATON_ASSIGN_OR_RETURN(nlohmann::json j, NodeReportJson(store, n, now));
    all.push_back(std::move(j));
  }
  return all;
}

}  // namespace baton
