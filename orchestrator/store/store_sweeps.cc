#include "orchestrator/store/store_sweeps.h"

#include "orchestrator/store/store_internal.h"

namespace baton {

namespace {

constexpr const char* kSweepColumns =
    "id, name, spec_path, spec, base_config, sweep_dir, job_id, max_parallel, keys, owner, "
    "cancelled, created_at";

SweepRecord ReadSweep(const Statement& r) {
  SweepRecord s;
  s.id = r.Int(0);
  s.name = r.Text(1);
  s.spec_path = r.Text(2);
  s.spec = r.Text(3);
  s.base_config = r.Text(4);
  s.sweep_dir = r.Text(5);
  s.job_id = r.Text(6);
  s.max_parallel = r.Int(7);
  s.keys = r.Text(8);
  s.owner = r.Text(9);
  s.cancelled = r.Int(10) != 0;
  s.created_at = r.Double(11);
  return s;
}

}  // namespace

Result<int64_t> CreateSweepInTx(Store& store, const SweepRecord& s) {
  BATON_ASSIGN_OR_RETURN(
      Statement * ins,
      StoreInternal::Db(store).Prepare(
          "INSERT INTO sweeps (name, spec_path, spec, base_config, sweep_dir, job_id, "
          "max_parallel, keys, owner, cancelled, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
          "?, ?) RETURNING id"));
  ins->Bind(1, s.name)
      .Bind(2, s.spec_path)
      .Bind(3, s.spec)
      .Bind(4, s.base_config)
      .Bind(5, s.sweep_dir)
      .Bind(6, s.job_id)
      .Bind(7, s.max_parallel)
      .Bind(8, s.keys)
      .Bind(9, s.owner)
      .Bind(10, int64_t{s.cancelled ? 1 : 0})
      .Bind(11, s.created_at);
  BATON_ASSIGN_OR_RETURN(const bool row, ins->Step());
  const int64_t id = row ? ins->Int(0) : 0;
  ins->Reset();
  if (!row) return Status::Internal("INSERT INTO sweeps returned no id");
  return id;
}

Status AddSweepMemberInTx(Store& store, const SweepMemberRecord& m) {
  BATON_ASSIGN_OR_RETURN(Statement * ins,
                         StoreInternal::Db(store).Prepare(
                             "INSERT INTO sweep_members (sweep_id, member_index, run_id, vals) "
                             "VALUES (?, ?, ?, ?)"));
  return ins->Bind(1, m.sweep_id).Bind(2, m.index).Bind(3, m.run_id).Bind(4, m.values).Run();
}

Status SetSweepDirInTx(Store& store, int64_t sweep_id, const std::string& dir) {
  BATON_ASSIGN_OR_RETURN(Statement * up, StoreInternal::Db(store).Prepare(
                                             "UPDATE sweeps SET sweep_dir = ? WHERE id = ?"));
  return up->Bind(1, dir).Bind(2, sweep_id).Run();
}

Status SetSweepJobInTx(Store& store, int64_t sweep_id, const std::string& job_id) {
  BATON_ASSIGN_OR_RETURN(Statement * up, StoreInternal::Db(store).Prepare(
                                             "UPDATE sweeps SET job_id = ? WHERE id = ?"));
  return up->Bind(1, job_id).Bind(2, sweep_id).Run();
}

Status SetSweepCancelledInTx(Store& store, int64_t sweep_id, bool cancelled) {
  BATON_ASSIGN_OR_RETURN(Statement * up, StoreInternal::Db(store).Prepare(
                                             "UPDATE sweeps SET cancelled = ? WHERE id = ?"));
  return up->Bind(1, int64_t{cancelled ? 1 : 0}).Bind(2, sweep_id).Run();
}

Result<std::vector<SweepRecord>> ListSweeps(Store& store) {
  BATON_ASSIGN_OR_RETURN(Statement * s,
                         StoreInternal::Db(store).Prepare(std::string("SELECT ") + kSweepColumns +
                                                          " FROM sweeps ORDER BY id DESC"));
  return s->Collect<SweepRecord>(ReadSweep);
}

Result<SweepRecord> FindSweep(Store& store, const std::string& id_or_name) {
  const bool by_id = !id_or_name.empty() && id_or_name.size() < 18 &&
                     id_or_name.find_first_not_of("0123456789") == std::string::npos;
  BATON_ASSIGN_OR_RETURN(
      Statement * s,
      StoreInternal::Db(store).Prepare(std::string("SELECT ") + kSweepColumns + " FROM sweeps " +
                                       (by_id ? "WHERE id = ?" : "WHERE name = ?") +
                                       " ORDER BY id DESC LIMIT 1"));
  if (by_id) {
    s->Bind(1, static_cast<int64_t>(std::stoll(id_or_name)));
  } else {
    s->Bind(1, id_or_name);
  }
  BATON_ASSIGN_OR_RETURN(std::vector<SweepRecord> found, s->Collect<SweepRecord>(ReadSweep));
  if (found.empty()) {
    return Status::NotFound("no sweep '" + id_or_name + "' (see `baton sweeps`)");
  }
  return found.front();
}

Result<std::vector<SweepMemberRecord>> ListSweepMembers(Store& store, int64_t sweep_id) {
  BATON_ASSIGN_OR_RETURN(Statement * s, StoreInternal::Db(store).Prepare(
                                            "SELECT sweep_id, member_index, run_id, vals FROM "
                                            "sweep_members WHERE sweep_id = ? ORDER BY "
                                            "member_index"));
  s->Bind(1, sweep_id);
  return s->Collect<SweepMemberRecord>([](const Statement& r) {
    return SweepMemberRecord{r.Int(0), r.Int(1), r.Int(2), r.Text(3)};
  });
}

}  // namespace baton
