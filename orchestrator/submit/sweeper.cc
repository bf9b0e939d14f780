// SubmitSweep, ResumeSweep and CancelSweep (sweeper.h): what a sweep creates and asks of SLURM.
#include "orchestrator/submit/sweeper.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/submit/canceller.h"
#include "orchestrator/submit/sbatch_script.h"
#include "schema/atomic_file.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

// Removes the folders a failed sweep created.
class CreatedFolders {
 public:
  ~CreatedFolders() {
    if (!armed_) return;
    std::error_code ec;
    for (const std::string& d : dirs_) fs::remove_all(d, ec);
  }
  Status Make(const std::string& dir) {
    std::error_code ec;
    if (fs::exists(dir, ec)) return Status::Config("'" + dir + "' already exists");
    dirs_.push_back(dir);
    fs::create_directories(dir, ec);
    if (ec) return Status::Io(dir + ": cannot create the folder: " + ec.message());
    return Status::Ok();
  }
  void Disarm() { armed_ = false; }

 private:
  bool armed_ = true;
  std::vector<std::string> dirs_;
};

// Writes a file's old text back unless disarmed.
struct ScriptRestore {
  std::string path;
  std::string text;
  bool armed = true;
  ~ScriptRestore() {
    if (armed) (void)WriteTextAtomic(path, text);
  }
};

std::string Absolute(const std::string& p) {
  std::string s = fs::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Member `p`'s run row, folder, run.yaml and sbatch.sh, inside the caller's transaction.
Status CreateMember(Store& store, const SweepRequest& req, const PreparedSweep& sweep,
                    PreparedMember& p, CreatedFolders& folders, double now) {
  NewRun row;
  row.name = p.config.run.name;
  row.config_source = Absolute(sweep.spec.base);
  row.run_dir = "(submitting sweep member " + std::to_string(p.member.index) + " " +
                std::to_string(now) + ")";
  row.target_steps = p.config.run.steps;
  row.max_restarts = p.config.slurm.max_restarts;
  row.max_failures = p.config.slurm.max_failures;
  row.partition = p.config.slurm.partition;
  row.owner = CurrentActingUser().name;
  row.cluster = sweep.cluster;
  BATON_ASSIGN_OR_RETURN(p.run_id, store.CreateRunInTx(row, now));
  if (p.budget) {
    p.budget->run_id = p.run_id;
    BATON_RETURN_IF_ERROR(store.UpsertStopSaveBudgetInTx(*p.budget));
  }
  p.run_dir = Absolute(req.baton_home + "/runs/" + std::to_string(p.run_id) + "-" +
                       Slugify(p.config.run.name));
  p.config.run.dir = p.run_dir;
  BATON_RETURN_IF_ERROR(folders.Make(p.run_dir));
  const RunFolder folder{p.run_dir};
  for (const std::string& d : {folder.LogsDir(), folder.EventsDir(), folder.CheckpointsDir()}) {
    BATON_RETURN_IF_ERROR(folders.Make(d));
  }
  const std::string frozen = ToYaml(p.config);
  BATON_ASSIGN_OR_RETURN(p.run_script,
                         RenderSbatchScript(p.config, {std::to_string(p.run_id), p.config.run.name,
                                                       p.run_dir, req.baton_bin, p.grace_env, ""}));
  BATON_RETURN_IF_ERROR(WriteTextAtomic(folder.RunYaml(), frozen));
  BATON_RETURN_IF_ERROR(WriteTextAtomic(folder.SbatchScript(), p.run_script));
  ::chmod(folder.SbatchScript().c_str(), 0755);
  BATON_RETURN_IF_ERROR(store.SetRunDirInTx(p.run_id, p.run_dir, frozen));
  return AddSweepMemberInTx(
      store, {sweep.sweep_id, p.member.index, p.run_id, p.member.ValuesJson().dump()});
}

// The value of the array script's `#SBATCH --<option>=` line ("" when it has none).
std::string SbatchOption(const std::string& script, const std::string& option) {
  const std::string head = "#SBATCH --" + option + "=";
  const size_t at = script.find("\n" + head);
  if (at == std::string::npos) return "";
  const size_t from = at + 1 + head.size();
  return script.substr(from, script.find('\n', from) - from);
}

// The array script with the --exclude the node ledger gives a new job now, as `baton submit`
// and `baton resume` compute it: on the members' cluster and the script's partition and nodes.
Result<std::string> ScriptWithCurrentExclude(Store& store, SlurmClient& slurm,
                                             const std::string& script, const RunRecord& member,
                                             double now, std::vector<std::string>* warnings) {
  const std::string nodes = SbatchOption(script, "nodes");
  BATON_ASSIGN_OR_RETURN(
      const std::string exclude,
      ExcludeForNewJob(&store, slurm, member.cluster, SbatchOption(script, "partition"),
                       nodes.empty() ? 1 : std::max<int64_t>(1, std::atoll(nodes.c_str())), now,
                       warnings));
  return WithExcludeLine(script, exclude);
}

}  // namespace

Status SubmitSweep(Store& store, SlurmClient& slurm, const SweepRequest& req, PreparedSweep* sw,
                   double now) {
  BATON_ASSIGN_OR_RETURN(Transaction tx, store.Begin());
  CreatedFolders folders;
  SweepRecord row;
  row.name = sw->name;
  row.spec_path = Absolute(sw->spec.path);
  row.spec = sw->spec.text;
  row.base_config = Absolute(sw->spec.base);
  row.max_parallel = sw->spec.max_parallel;
  row.keys = nlohmann::json(sw->keys).dump();
  row.owner = CurrentActingUser().name;
  row.created_at = now;
  BATON_ASSIGN_OR_RETURN(sw->sweep_id, CreateSweepInTx(store, row));
  sw->sweep_dir = Absolute(req.baton_home + "/sweeps/" + std::to_string(sw->sweep_id) + "-" +
                           Slugify(sw->name));
  BATON_RETURN_IF_ERROR(folders.Make(sw->sweep_dir));
  BATON_RETURN_IF_ERROR(folders.Make(sw->sweep_dir + "/logs"));
  std::vector<std::string> dirs;
  for (PreparedMember& p : sw->members) {
    BATON_RETURN_IF_ERROR(CreateMember(store, req, *sw, p, folders, now));
    dirs.push_back(p.run_dir);
  }
  // Member 0's script, rendered for the sweep: its #SBATCH lines are every member's.
  RunConfig first = sw->members.front().config;
  first.run.dir = sw->sweep_dir;
  // The node ledger's exclusions on the members' partition, as a submit adds them.
  BATON_ASSIGN_OR_RETURN(
      const std::string exclude,
      ExcludeForNewJob(&store, slurm, sw->cluster, first.slurm.partition, first.slurm.nodes, now,
                       &sw->warnings, &sw->exclusion_refused));
  BATON_ASSIGN_OR_RETURN(
      const std::string base_script,
      RenderSbatchScript(first, {"sweep-" + std::to_string(sw->sweep_id), sw->name, sw->sweep_dir,
                                 req.baton_bin, sw->grace_s, exclude}));
  BATON_ASSIGN_OR_RETURN(sw->array_script,
                         ArrayScript(base_script, sw->sweep_dir, req.baton_bin, dirs));
  const std::string script_path = sw->sweep_dir + "/sweep.sh";
  BATON_RETURN_IF_ERROR(WriteTextAtomic(script_path, sw->array_script));
  ::chmod(script_path.c_str(), 0755);
  BATON_RETURN_IF_ERROR(SetSweepDirInTx(store, sw->sweep_id, sw->sweep_dir));

  BATON_ASSIGN_OR_RETURN(sw->job_id, slurm.SubmitArray(script_path, sw->ArraySpec()));
  Status st = SetSweepJobInTx(store, sw->sweep_id, sw->job_id);
  for (PreparedMember& p : sw->members) {
    p.job_id = sw->job_id + "_" + std::to_string(p.member.index);
    if (st.ok()) st = store.SetRunJobInTx(p.run_id, p.job_id, now);
  }
  if (st.ok()) st = tx.Commit();
  if (!st.ok()) {
    (void)slurm.Cancel(sw->job_id);  // no array without its runs
    return st.Annotate("recording sweep array " + sw->job_id + " (cancelled it)");
  }
  folders.Disarm();
  return Status::Ok();
}

Result<std::vector<int64_t>> ResumeSweep(Store& store, SlurmClient& slurm, const SweepRecord& sweep,
                                         double now, std::vector<std::string>* warnings) {
  BATON_ASSIGN_OR_RETURN(const std::vector<SweepMemberRecord> members,
                         ListSweepMembers(store, sweep.id));
  std::vector<int64_t> indexes;
  std::string list;
  for (const SweepMemberRecord& m : members) {
    BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(m.run_id));
    if (run.status == RunStatus::kCompleted || !IsTerminal(run.status)) continue;
    indexes.push_back(m.index);
    list += (list.empty() ? "" : ",") + std::to_string(m.index);
  }
  if (indexes.empty()) return indexes;
  const int64_t p = sweep.max_parallel > 0 ? sweep.max_parallel : int64_t(indexes.size());
  const std::string script_path = sweep.sweep_dir + "/sweep.sh";
  BATON_ASSIGN_OR_RETURN(const std::string old_script, ReadFile(script_path));
  BATON_ASSIGN_OR_RETURN(const RunRecord first, store.GetRun(members.front().run_id));
  BATON_ASSIGN_OR_RETURN(const std::string script,
                         ScriptWithCurrentExclude(store, slurm, old_script, first, now, warnings));
  // The script the new array runs; put back when anything below fails.
  BATON_RETURN_IF_ERROR(WriteTextAtomic(script_path, script));
  ScriptRestore restore{script_path, old_script};
  BATON_ASSIGN_OR_RETURN(Transaction tx, store.Begin());
  // `baton cancel`'s marks would end the new tasks at their start.
  for (const SweepMemberRecord& m : members) {
    for (const int64_t i : indexes) {
      if (i != m.index) continue;
      BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(m.run_id));
      std::error_code ec;
      fs::remove(RunFolder{run.run_dir}.CancelMark(), ec);
    }
  }
  BATON_ASSIGN_OR_RETURN(
      const std::string job,
      slurm.SubmitArray(
          script_path, list + "%" + std::to_string(std::min<int64_t>(p, int64_t(indexes.size())))));
  Status st = SetSweepJobInTx(store, sweep.id, job);
  if (st.ok()) st = SetSweepCancelledInTx(store, sweep.id, false);
  for (const SweepMemberRecord& m : members) {
    if (std::find(indexes.begin(), indexes.end(), m.index) == indexes.end() || !st.ok()) continue;
    const std::string task = job + "_" + std::to_string(m.index);
    st = store.SetRunJobInTx(m.run_id, task, now);
    if (st.ok())
      st = store.SetRunStatusInTx(m.run_id, RunStatus::kPending,
                                  "resumed with sweep " + sweep.name + " as " + task, now);
  }
  if (st.ok()) st = tx.Commit();
  if (!st.ok()) {
    (void)slurm.Cancel(job);
    return st.Annotate("resuming sweep " + sweep.name + " as array " + job + " (cancelled it)");
  }
  restore.armed = false;
  return indexes;
}

Result<int64_t> CancelSweep(Store& store, SlurmClient& slurm, const SweepRecord& sweep,
                            double now) {
  BATON_ASSIGN_OR_RETURN(const std::vector<SweepMemberRecord> members,
                         ListSweepMembers(store, sweep.id));
  int64_t cancelled = 0;
  for (const SweepMemberRecord& m : members) {
    BATON_ASSIGN_OR_RETURN(const RunRecord run, store.GetRun(m.run_id));
    if (IsTerminal(run.status)) continue;
    BATON_ASSIGN_OR_RETURN(const CancelRunResult r,
                           CancelRun(store, slurm, std::to_string(m.run_id),
                                     "`baton sweep cancel " + sweep.name + "`", now));
    if (r.changed) ++cancelled;
  }
  // Tasks not started yet have no run to cancel them through; the array takes them all.
  if (!sweep.job_id.empty()) BATON_RETURN_IF_ERROR(slurm.Cancel(sweep.job_id));
  BATON_RETURN_IF_ERROR(store.Write([&] { return SetSweepCancelledInTx(store, sweep.id, true); }));
  return cancelled;
}

}  // namespace baton
