#include "orchestrator/store/store_audit.h"

#include "orchestrator/store/store_internal.h"

namespace baton {

Result<int64_t> AppendRunAction(Store& store, const RunActionRecord& a) {
  Db& db = StoreInternal::Db(store);
  int64_t id = 0;
  BATON_RETURN_IF_ERROR(store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(
        Statement * s,
        db.Prepare("INSERT INTO run_actions (run_id, username, action, source, asked_at, result, "
                   "http_status, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"));
    s->Bind(1, a.run_id)
        .Bind(2, a.user)
        .Bind(3, a.action)
        .Bind(4, a.source)
        .Bind(5, a.asked_at)
        .Bind(6, a.result)
        .Bind(7, a.http_status)
        .Bind(8, a.message);
    BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
    if (!row) return Status::Internal("INSERT INTO run_actions returned no id");
    id = s->Int(0);
    s->Reset();
    return Status::Ok();
  }));
  return id;
}

Result<int64_t> CountRunActions(Store& store, int64_t run_id) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            "SELECT COUNT(*) FROM run_actions WHERE run_id = ?"));
  s->Bind(1, run_id);
  BATON_ASSIGN_OR_RETURN(const bool row, s->Step());
  const int64_t n = row ? s->Int(0) : 0;
  s->Reset();
  return n;
}

Result<std::vector<RunActionRecord>> ListRunActions(Store& store, int64_t run_id, int64_t limit,
                                                    int64_t offset) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(
                             "SELECT id, run_id, username, action, source, asked_at, result, "
                             "http_status, message FROM run_actions WHERE run_id = ? "
                             "ORDER BY id DESC LIMIT ? OFFSET ?"));
  s->Bind(1, run_id).Bind(2, limit).Bind(3, offset);
  return s->Collect<RunActionRecord>([](const Statement& r) {
    return RunActionRecord{r.Int(0),    r.Int(1),  r.Text(2), r.Text(3), r.Text(4),
                           r.Double(5), r.Text(6), r.Int(7),  r.Text(8)};
  });
}

}  // namespace baton
