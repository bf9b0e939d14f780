#include "orchestrator/store/store_nodes.h"

#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

constexpr const char* kNodeColumns =
    "id, cluster, partition_name, host, first_seen_at, excluded_at, excluded_until, excluded_by, "
    "exclusion_reason, admitted_at, probation_until FROM nodes";

NodeRecord ReadNode(const Statement& r) {
  NodeRecord n;
  n.id = r.Int(0);
  n.key = {r.Text(1), r.Text(2), r.Text(3)};
  n.first_seen_at = r.Double(4);
  n.excluded_at = r.OptDouble(5);
  n.excluded_until = r.OptDouble(6);
  n.excluded_by = r.Text(7);
  n.exclusion_reason = r.Text(8);
  n.admitted_at = r.Double(9);
  n.probation_until = r.OptDouble(10);
  return n;
}

}  // namespace

Result<int64_t> EnsureNodeInTx(Store& store, const NodeKey& key, double now) {
  Db& db = StoreInternal::Db(store);
  BATON_ASSIGN_OR_RETURN(
      Statement * ins,
      db.Prepare("INSERT INTO nodes (cluster, partition_name, host, first_seen_at) "
                 "VALUES (?, ?, ?, ?) ON CONFLICT (cluster, partition_name, host) DO NOTHING"));
  ins->Bind(1, key.cluster).Bind(2, key.partition).Bind(3, key.host).Bind(4, now);
  BATON_RETURN_IF_ERROR(ins->Run());
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      db.Prepare("SELECT id FROM nodes WHERE cluster = ? AND partition_name = ? AND host = ?"));
  s->Bind(1, key.cluster).Bind(2, key.partition).Bind(3, key.host);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t id = row ? s->Int(0) : 0;
  s->Reset();
  if (!row) return Status::Internal("node " + key.host + " missing after its insert");
  return id;
}

Status UpdateNodeInTx(Store& store, const NodeRecord& n) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare("UPDATE nodes SET excluded_at = ?, excluded_until = ?, "
                                       "excluded_by = ?, exclusion_reason = ?, admitted_at = ?, "
                                       "probation_until = ? WHERE id = ?"));
  s->Bind(1, n.excluded_at)
      .Bind(2, n.excluded_until)
      .Bind(3, n.excluded_by)
      .Bind(4, n.exclusion_reason)
      .Bind(5, n.admitted_at)
      .Bind(6, n.probation_until)
      .Bind(7, n.id);
  return s->Run();
}

Result<std::vector<NodeRecord>> ListNodes(Store& store, const std::string& cluster,
                                          const std::string& partition) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            std::string("SELECT ") + kNodeColumns +
                                            " WHERE (? = '' OR cluster = ?) AND (? = '' OR "
                                            "partition_name = ?) ORDER BY cluster, partition_name, "
                                            "host"));
  s->Bind(1, cluster).Bind(2, cluster).Bind(3, partition).Bind(4, partition);
  return s->Collect<NodeRecord>(ReadNode);
}

Result<std::vector<NodeRecord>> FindNodesByHost(Store& store, const std::string& host) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            std::string("SELECT ") + kNodeColumns +
                                            " WHERE host = ? ORDER BY cluster, partition_name"));
  s->Bind(1, host);
  return s->Collect<NodeRecord>(ReadNode);
}

Result<NodeRecord> GetNode(Store& store, int64_t node_id) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(std::string("SELECT ") + kNodeColumns + " WHERE id = ?"));
  s->Bind(1, node_id);
  BATON_ASSIGN_OR_RETURN(std::vector<NodeRecord> rows, s->Collect<NodeRecord>(ReadNode));
  if (rows.empty()) return Status::NotFound("no node with id " + std::to_string(node_id));
  return rows[0];
}

Result<bool> AddNodeIncidentInTx(Store& store, const NodeIncidentRecord& i) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(
          "INSERT INTO node_incidents (node_id, run_id, job_id, restart_count, in_job_seq, "
          "task_rank, kind, source, evidence, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (node_id, run_id, job_id, restart_count, in_job_seq, kind, evidence) "
          "DO NOTHING RETURNING id"));
  s->Bind(1, i.node_id)
      .Bind(2, i.run_id)
      .Bind(3, i.job_id)
      .Bind(4, i.restart_count)
      .Bind(5, i.in_job_seq)
      .Bind(6, i.rank)
      .Bind(7, i.kind)
      .Bind(8, i.source)
      .Bind(9, i.evidence)
      .Bind(10, i.at);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  s->Reset();
  return row;
}

Result<std::vector<NodeIncidentRecord>> ListNodeIncidents(Store& store, int64_t node_id,
                                                          double since, int64_t limit) {
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(
          "SELECT id, node_id, run_id, job_id, restart_count, in_job_seq, task_rank, kind, "
          "source, evidence, seen_at FROM node_incidents WHERE node_id = ? AND seen_at >= ? "
          "ORDER BY seen_at DESC, id DESC LIMIT ?"));
  s->Bind(1, node_id).Bind(2, since).Bind(3, limit);
  return s->Collect<NodeIncidentRecord>([](const Statement& r) {
    return NodeIncidentRecord{r.Int(0), r.Int(1),  r.Int(2),  r.Text(3), r.Int(4),    r.Int(5),
                              r.Int(6), r.Text(7), r.Text(8), r.Text(9), r.Double(10)};
  });
}

Status AppendNodeActionInTx(Store& store, const NodeActionRecord& a) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(
                             "INSERT INTO node_actions (node_id, username, action, asked_at, "
                             "message) VALUES (?, ?, ?, ?, ?)"));
  s->Bind(1, a.node_id).Bind(2, a.user).Bind(3, a.action).Bind(4, a.asked_at).Bind(5, a.message);
  return s->Run();
}

Result<std::vector<NodeActionRecord>> ListNodeActions(Store& store, int64_t node_id,
                                                      int64_t limit) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(
                             "SELECT id, node_id, username, action, asked_at, message FROM "
                             "node_actions WHERE node_id = ? ORDER BY id DESC LIMIT ?"));
  s->Bind(1, node_id).Bind(2, limit);
  return s->Collect<NodeActionRecord>([](const Statement& r) {
    return NodeActionRecord{r.Int(0), r.Int(1), r.Text(2), r.Text(3), r.Double(4), r.Text(5)};
  });
}

Result<int64_t> NodeLogCursor(Store& store, const std::string& path) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(
                             "SELECT scanned_bytes FROM node_log_cursors WHERE path = ?"));
  s->Bind(1, path);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t n = row ? s->Int(0) : 0;
  s->Reset();
  return n;
}

Status SetNodeLogCursorInTx(Store& store, const std::string& path, int64_t offset) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(
                             "INSERT INTO node_log_cursors (path, scanned_bytes) VALUES (?, ?) "
                             "ON CONFLICT (path) DO UPDATE SET scanned_bytes = "
                             "excluded.scanned_bytes"));
  s->Bind(1, path).Bind(2, offset);
  return s->Run();
}

}  // namespace baton
