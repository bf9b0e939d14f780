#include "orchestrator/store/db.h"

namespace baton {

Result<Transaction> Transaction::Begin(Db& db) {
  BATON_RETURN_IF_ERROR(db.BeginWrite());
  return Transaction(&db);
}

Result<Transaction> Transaction::BeginForRun(Db& db, int64_t run_id) {
  BATON_RETURN_IF_ERROR(db.BeginRunWrite(run_id));
  return Transaction(&db);
}

Status Transaction::Commit() {
  if (db_ == nullptr) return Status::Internal("store: commit of a finished transaction");
  if (db_->before_commit_) BATON_RETURN_IF_ERROR(db_->before_commit_());
  Status st = db_->Exec("COMMIT");
  if (!st.ok()) return st;  // still active: the destructor rolls back
  if (db_->on_end_) db_->on_end_();
  db_ = nullptr;
  return Status::Ok();
}

void Transaction::Rollback() {
  if (db_ == nullptr) return;
  if (db_->InTransaction()) (void)db_->Exec("ROLLBACK");
  if (db_->on_end_) db_->on_end_();
  db_ = nullptr;
}

Transaction::~Transaction() { Rollback(); }

}  // namespace baton
