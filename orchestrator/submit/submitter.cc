#include "orchestrator/submit/submitter.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/submit/grace_check.h"
#include "orchestrator/submit/memory_check.h"
#include "orchestrator/submit/run_cluster.h"
#include "orchestrator/submit/sbatch_script.h"
#include "orchestrator/submit/storage_check.h"
#include "schema/alerts_config.h"
#include "schema/atomic_file.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

Status CheckName(const std::string& name, const std::string& where) {
  if (name.empty()) return Status::InvalidArgument(where + ": the run name is empty");
  if (name.size() > 100)
    return Status::InvalidArgument(where + ": the run name is longer than 100 characters");
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    return Status::InvalidArgument(where + ": run name '" + name +
                                   "' is all digits and would be mistaken for a run id");
  }
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument(where + ": the run name has a control character");
    }
  }
  return Status::Ok();
}

// Removes what a failed submit created: the whole folder when this call made it, else only the
// files it wrote.
class Cleanup {
 public:
  ~Cleanup() {
    if (!armed_) return;
    std::error_code ec;
    if (created_dir_) {
      fs::remove_all(dir_, ec);
    } else {
      for (const std::string& f : files_) fs::remove_all(f, ec);
    }
  }
  void SetDir(const std::string& dir, bool created) {
    dir_ = dir;
    created_dir_ = created;
  }
  void AddFile(const std::string& path) { files_.push_back(path); }
  void Disarm() { armed_ = false; }

 private:
  bool armed_ = true;
  bool created_dir_ = false;
  std::string dir_;
  std::vector<std::string> files_;
};

}  // namespace

namespace {

// The nearest folder that exists on the way to where the run folder will be: the probe writes
// there, on the filesystem the checkpoints will use.
std::string ProbeFolder(const RunConfig& config, const SubmitRequest& req) {
  fs::path p = !config.run.dir.empty() ? fs::absolute(config.run.dir).parent_path()
                                       : fs::path(req.baton_home) / "runs";
  std::error_code ec;
  p = p.lexically_normal();
  while (!p.empty() && !fs::is_directory(p, ec) && p != p.root_path()) p = p.parent_path();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// What the checks settled before anything is created: the resolved config (its name the run's)
// and what the job script needs besides.
struct CheckedSubmit {
  RunConfig config;
  GraceCheck grace;
  std::string cluster;
  std::string exclude;  // the new job's --exclude list
};

// Every check a submit makes, dry run included, in this order: the name, the memory plan, the
// stop save against the grace, the storage forecast, the cluster, the nodes to exclude. Fills
// `out`'s name, budget, warnings, storage and refused exclusions.
Result<CheckedSubmit> CheckSubmit(Store* store, SlurmClient& slurm, const SubmitRequest& req,
                                  double now, SubmitResult* out) {
  CheckedSubmit c;
  BATON_ASSIGN_OR_RETURN(c.config, LoadRunConfig(req.config_path));
  out->name = req.name.empty() ? c.config.run.name : req.name;
  BATON_RETURN_IF_ERROR(
      CheckName(out->name, req.name.empty() ? req.config_path + ": run.name" : "--name"));
  c.config.run.name = out->name;
  // One plan for both checks. Without a trainer or a plan the memory check says what it says
  // today; the grace check is then only a warning (or, strict, a refusal).
  std::string no_plan;
  const std::optional<MemoryPlanReport> plan =
      PlanIfPossible(c.config, req.config_path, req.trainer_bin, &no_plan);
  const MemoryPlanReport* plan_or_null = plan ? &*plan : nullptr;
  BATON_RETURN_IF_ERROR(CheckMemoryPlan(c.config, req.config_path, req.trainer_bin, plan_or_null));
  BATON_RETURN_IF_ERROR(CheckGrace(c.config, req.config_path, req.strict, plan_or_null, no_plan,
                                   slurm, store, ProbeFolder(c.config, req), now, &c.grace));
  out->budget = c.grace.budget;
  out->warnings = c.grace.warnings;
  BATON_ASSIGN_OR_RETURN(out->storage,
                         CheckStorage(c.config, req.config_path, req.strict, plan_or_null,
                                      ProbeFolder(c.config, req), &out->warnings));

  BATON_ASSIGN_OR_RETURN(c.cluster, ResolveRunCluster(c.config.slurm, req.config_path, slurm));
  BATON_ASSIGN_OR_RETURN(c.exclude, ExcludeForNewJob(store, slurm, c.cluster,
                                                     c.config.slurm.partition, c.config.slurm.nodes,
                                                     now, &out->warnings, &out->exclusion_refused));
  return c;
}

// A dry run renders the script only. No id yet: "NEW" stands in for it in the folder name and
// the job name.
Result<SubmitResult> RenderDryRun(const SubmitRequest& req, CheckedSubmit c, SubmitResult out) {
  out.run_dir = !c.config.run.dir.empty() ? c.config.run.dir
                                          : req.baton_home + "/runs/NEW-" + Slugify(out.name);
  c.config.run.dir = out.run_dir;
  BATON_ASSIGN_OR_RETURN(out.script,
                         RenderSbatchScript(c.config, {"NEW", out.name, out.run_dir, req.baton_bin,
                                                       GraceEnvValue(c.grace), c.exclude}));
  return out;
}

// The run's row, inside the caller's transaction, and its stop-save budget when there is one.
// Sets `out`'s run id.
Status InsertRunRow(Store& store, const SubmitRequest& req, const CheckedSubmit& c, double now,
                    SubmitResult* out) {
  NewRun row;
  row.name = out->name;
  row.config_source = fs::absolute(req.config_path).string();
  // A unique placeholder until the id is known (run_dir is UNIQUE).
  row.run_dir = "(submitting " + std::to_string(now) + ")";
  row.target_steps = c.config.run.steps;
  row.max_restarts = c.config.slurm.max_restarts;
  row.max_failures = c.config.slurm.max_failures;
  row.partition = c.config.slurm.partition;
  row.owner = CurrentActingUser().name;
  row.cluster = c.cluster;
  row.config = "";
  BATON_ASSIGN_OR_RETURN(out->run_id, store.CreateRunInTx(row, now));
  if (out->budget) {
    out->budget->run_id = out->run_id;
    BATON_RETURN_IF_ERROR(store.UpsertStopSaveBudgetInTx(*out->budget));
  }
  return Status::Ok();
}

// Where the run lives: run.dir as given, else runs/<id>-<name> under the baton home; absolute,
// normalised, without a trailing slash (the form the store keeps).
std::string RunDirOf(const RunConfig& config, const SubmitRequest& req, const std::string& name,
                     int64_t id) {
  std::string dir = !config.run.dir.empty()
                        ? config.run.dir
                        : req.baton_home + "/runs/" + std::to_string(id) + "-" + Slugify(name);
  dir = fs::absolute(dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// The folder: new, or an existing one that holds no run yet. `cleanup` learns what this call
// created.
Status MakeRunFolder(const RunFolder& folder, const std::string& config_path, Cleanup* cleanup) {
  std::error_code ec;
  const bool existed = fs::exists(folder.root, ec);
  if (existed && (fs::exists(folder.RunYaml(), ec) || fs::exists(folder.EventsDir(), ec))) {
    return Status::Config(config_path + ": run.dir: '" + folder.root +
                          "' already holds a run (run.yaml or events/); choose another folder");
  }
  cleanup->SetDir(folder.root, !existed);
  for (const std::string& d :
       {folder.root, folder.LogsDir(), folder.EventsDir(), folder.CheckpointsDir()}) {
    const bool had = fs::exists(d, ec);
    fs::create_directories(d, ec);
    if (ec) return Status::Io(d + ": cannot create the run folder: " + ec.message());
    if (!had && d != folder.root) cleanup->AddFile(d);
  }
  return Status::Ok();
}

// Freezes the resolved config (alerts included) into run.yaml and renders sbatch.sh into `out`
// and the folder. Returns the frozen text, which the store keeps too.
Result<std::string> WriteRunFiles(const SubmitRequest& req, const CheckedSubmit& c,
                                  const RunFolder& folder, SubmitResult* out, Cleanup* cleanup) {
  BATON_ASSIGN_OR_RETURN(const AlertsSection alerts, LoadRunAlerts(req.config_path));
  std::string frozen = AppendAlerts(ToYaml(c.config), alerts);
  BATON_ASSIGN_OR_RETURN(
      out->script,
      RenderSbatchScript(c.config, {std::to_string(out->run_id), out->name, out->run_dir,
                                    req.baton_bin, GraceEnvValue(c.grace), c.exclude}));
  cleanup->AddFile(folder.RunYaml());
  BATON_RETURN_IF_ERROR(WriteTextAtomic(folder.RunYaml(), frozen));
  const std::string script_path = folder.SbatchScript();
  cleanup->AddFile(script_path);
  BATON_RETURN_IF_ERROR(WriteTextAtomic(script_path, out->script));
  ::chmod(script_path.c_str(), 0755);
  return frozen;
}

// The row's real values, then sbatch, then the job id, then the commit. A job whose run could not
// be recorded is cancelled rather than left an orphan.
Status SubmitAndRecord(Store& store, SlurmClient& slurm, Transaction& tx, const RunFolder& folder,
                       const std::string& frozen, double now, SubmitResult* out) {
  BATON_RETURN_IF_ERROR(store.SetRunDirInTx(out->run_id, out->run_dir, frozen));
  BATON_ASSIGN_OR_RETURN(out->job_id, slurm.Submit(folder.SbatchScript()));
  Status st = store.SetRunJobInTx(out->run_id, out->job_id, now);
  if (st.ok()) st = tx.Commit();
  if (!st.ok()) {
    // The job exists but the run does not: take the job back.
    (void)slurm.Cancel(out->job_id);
    return st.Annotate("recording job " + out->job_id + " (cancelled it)");
  }
  return Status::Ok();
}

}  // namespace

Result<SubmitResult> SubmitRun(Store* store, SlurmClient& slurm, const SubmitRequest& req,
                               double now) {
  SubmitResult out;
  BATON_ASSIGN_OR_RETURN(CheckedSubmit checked, CheckSubmit(store, slurm, req, now, &out));
  if (req.dry_run) return RenderDryRun(req, std::move(checked), std::move(out));
  if (store == nullptr) return Status::Internal("submit without a store");

  // All in one transaction; `cleanup` (destroyed first) removes the files of a failed submit
  // before the transaction rolls its row back.
  BATON_ASSIGN_OR_RETURN(Transaction tx, store->Begin());
  BATON_RETURN_IF_ERROR(InsertRunRow(*store, req, checked, now, &out));
  out.run_dir = RunDirOf(checked.config, req, out.name, out.run_id);
  checked.config.run.dir = out.run_dir;
  const RunFolder folder{out.run_dir};
  Cleanup cleanup;
  BATON_RETURN_IF_ERROR(MakeRunFolder(folder, req.config_path, &cleanup));
  BATON_ASSIGN_OR_RETURN(const std::string frozen,
                         WriteRunFiles(req, checked, folder, &out, &cleanup));
  BATON_RETURN_IF_ERROR(SubmitAndRecord(*store, slurm, tx, folder, frozen, now, &out));
  cleanup.Disarm();
  return out;
}

}  // namespace baton
