// The node ledger as a report: every node with its status, the end of its exclusion or
// probation, its incidents (run, job, rank, kind, evidence) and its audit trail, as JSON. The one
// shape `baton nodes --json` prints and `GET /api/nodes` serves (docs/nodes.md, docs/http_api.md),
// so the page a user shows the admins and the file they mail them say the same.
// Reads only; thread-compatible over the Store it is given.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "orchestrator/store/store.h"
#include "orchestrator/store/store_nodes.h"

namespace baton {

// ok | probation | excluded (by baton) | excluded by USER.
std::string NodeStatusText(const NodeRecord& n, double now);

// One node: host, cluster, partition, status, excluded, excluded_by, reason, excluded_until and
// probation_until (null when not), incidents (newest first) and actions (newest first).
[[nodiscard]] Result<nlohmann::json> NodeReportJson(Store& store, const NodeRecord& n, double now);

// Every node of the ledger, by cluster, partition and host.
[[nodiscard]] Result<nlohmann::json> NodeReport(Store& store, double now);

}  // namespace baton
