#include "orchestrator/store/store_copy_plan.h"

// The owner's runs, as the subquery every run-scoped table's --owner condition uses.
#define BATON_OWNER_RUNS "(SELECT id FROM runs WHERE owner = ?1)"

namespace baton {

const std::vector<CopyTable>& CopyPlan() {
  static const std::vector<CopyTable> plan = {
      {"runs", "id", true, {}, "owner = ?1", "run_dir", OnMatch::kRefuse},
      {"attempts",
       "id",
       true,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"steps",
       "attempt_id, step",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}, {"attempt_id", "attempts", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"microsteps",
       "attempt_id, step, micro",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}, {"attempt_id", "attempts", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"checkpoints",
       "run_id, step",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}, {"attempt_id", "attempts", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"ingest_cursors",
       "path",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      // The rollups' blobs hold steps, values and times only: copied byte for byte.
      {"step_rollups",
       "run_id, level, block, attempt_id",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}, {"attempt_id", "attempts", RefKind::kSigned}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"step_rollup_runs",
       "run_id",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"time_buckets",
       "run_id, attempt_id",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}, {"attempt_id", "attempts", RefKind::kSoft}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"stop_save_budgets",
       "run_id",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      // A cache of a folder's measured write rate: the lab's, not a user's.
      {"write_probes", "folder", false, {}, "", "folder", OnMatch::kKeepTarget},
      // Credentials of one server: never handed to one person's copy.
      {"api_tokens", "id", true, {}, "", "username", OnMatch::kKeepTarget},
      {"run_actions",
       "id",
       true,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"incidents",
       "id",
       true,
       {{"run_id", "runs", RefKind::kForeignKey},
        {"first_attempt_id", "attempts", RefKind::kSoft},
        {"last_attempt_id", "attempts", RefKind::kSoft}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      // A delivery still pending stays with the store it was queued in under --owner (the lab's
      // server sends it); one copy of a history sends it once.
      {"alert_deliveries",
       "id",
       true,
       {{"incident_id", "incidents", RefKind::kForeignKey}},
       "state = 'sent' AND incident_id IN (SELECT id FROM incidents WHERE run_id "
       "IN " BATON_OWNER_RUNS ")",
       "",
       OnMatch::kNone},
      {"sweeps",
       "id",
       true,
       {},
       "owner = ?1 OR id IN (SELECT sweep_id FROM sweep_members WHERE run_id IN " BATON_OWNER_RUNS
       ")",
       "",
       OnMatch::kNone},
      {"sweep_members",
       "sweep_id, member_index",
       false,
       {{"sweep_id", "sweeps", RefKind::kForeignKey}, {"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      // A run's eval jobs go with it: the target then never submits them again.
      {"eval_jobs",
       "id",
       true,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      // One row per physical node: a node the target knows is that node (its ledger state kept).
      {"nodes",
       "id",
       true,
       {},
       "id IN (SELECT node_id FROM node_incidents WHERE run_id IN " BATON_OWNER_RUNS ")",
       "cluster, partition_name, host",
       OnMatch::kReuse},
      {"node_incidents",
       "id",
       true,
       {{"node_id", "nodes", RefKind::kForeignKey}, {"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      {"node_actions",
       "id",
       true,
       {{"node_id", "nodes", RefKind::kForeignKey}},
       "node_id IN (SELECT node_id FROM node_incidents WHERE run_id IN " BATON_OWNER_RUNS ")",
       "",
       OnMatch::kNone},
      {"evals",
       "run_id, step",
       false,
       {{"run_id", "runs", RefKind::kForeignKey}},
       "run_id IN " BATON_OWNER_RUNS,
       "",
       OnMatch::kNone},
      // Job logs live in their run's folder: the owner's are those under the owner's run folders.
      {"node_log_cursors",
       "path",
       false,
       {},
       "EXISTS (SELECT 1 FROM runs r WHERE r.owner = ?1 AND "
       "substr(path, 1, length(r.run_dir) + 1) = r.run_dir || '/')",
       "path",
       OnMatch::kKeepTarget},
  };
  return plan;
}

const CopyTable* FindCopyTable(const std::string& table) {
  for (const CopyTable& t : CopyPlan()) {
    if (table == t.name) return &t;
  }
  return nullptr;
}

std::vector<std::string> SplitColumns(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string col = list.substr(start, comma - start);
    while (!col.empty() && col.front() == ' ') col.erase(0, 1);
    while (!col.empty() && col.back() == ' ') col.pop_back();
    if (!col.empty()) out.push_back(col);
    start = comma + 1;
  }
  return out;
}

}  // namespace baton

#undef BATON_OWNER_RUNS
