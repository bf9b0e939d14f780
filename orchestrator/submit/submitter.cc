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

}  // namespace

Result<SubmitResult> SubmitRun(Store* store, SlurmClient& slurm, const SubmitRequest& req,
                               double now) {
  BATON_ASSIGN_OR_RETURN(RunConfig config, LoadRunConfig(req.config_path));
  SubmitResult out;
  out.name = req.name.empty() ? config.run.name : req.name;
  BATON_RETURN_IF_ERROR(
      CheckName(out.name, req.name.empty() ? req.config_path + ": run.name" : "--name"));
  config.run.name = out.name;
  // One plan for both checks. Without a trainer or a plan the memory check says what it says
  // today; the grace check is then only a warning (or, strict, a refusal).
  std::string no_plan;
  const std::optional<MemoryPlanReport> plan =
      PlanIfPossible(config, req.config_path, req.trainer_bin, &no_plan);
  BATON_RETURN_IF_ERROR(
      CheckMemoryPlan(config, req.config_path, req.trainer_bin, plan ? &*plan : nullptr));
  GraceCheck grace;
  BATON_RETURN_IF_ERROR(CheckGrace(config, req.config_path, req.strict, plan ? &*plan : nullptr,
                                   no_plan, slurm, store, ProbeFolder(config, req), now, &grace));
  out.budget = grace.budget;
  out.warnings = grace.warnings;
  BATON_ASSIGN_OR_RETURN(out.storage,
                         CheckStorage(config, req.config_path, req.strict, plan ? &*plan : nullptr,
                                      ProbeFolder(config, req), &out.warnings));

  BATON_ASSIGN_OR_RETURN(const std::string cluster,
                         ResolveRunCluster(config.slurm, req.config_path, slurm));
  BATON_ASSIGN_OR_RETURN(
      const std::string exclude,
      ExcludeForNewJob(store, slurm, cluster, config.slurm.partition, config.slurm.nodes, now,
                       &out.warnings, &out.exclusion_refused));
  if (req.dry_run) {
    // No id yet: "NEW" stands in for it in the folder name and the job name.
    out.run_dir = !config.run.dir.empty() ? config.run.dir
                                          : req.baton_home + "/runs/NEW-" + Slugify(out.name);
    config.run.dir = out.run_dir;
    BATON_ASSIGN_OR_RETURN(out.script,
                           RenderSbatchScript(config, {"NEW", out.name, out.run_dir, req.baton_bin,
                                                       GraceEnvValue(grace), exclude}));
    return out;
  }
  if (store == nullptr) return Status::Internal("submit without a store");

  BATON_ASSIGN_OR_RETURN(Transaction tx, store->Begin());
  NewRun row;
  row.name = out.name;
  row.config_source = fs::absolute(req.config_path).string();
  // A unique placeholder until the id is known (run_dir is UNIQUE).
  row.run_dir = "(submitting " + std::to_string(now) + ")";
  row.target_steps = config.run.steps;
  row.max_restarts = config.slurm.max_restarts;
  row.max_failures = config.slurm.max_failures;
  row.partition = config.slurm.partition;
  row.owner = CurrentActingUser().name;
  row.cluster = cluster;
  row.config = "";
  BATON_ASSIGN_OR_RETURN(const int64_t id, store->CreateRunInTx(row, now));
  out.run_id = id;
  if (out.budget) {
    out.budget->run_id = id;
    BATON_RETURN_IF_ERROR(store->UpsertStopSaveBudgetInTx(*out.budget));
  }
  out.run_dir = !config.run.dir.empty()
                    ? config.run.dir
                    : req.baton_home + "/runs/" + std::to_string(id) + "-" + Slugify(out.name);
  out.run_dir = fs::absolute(out.run_dir).lexically_normal().string();
  while (out.run_dir.size() > 1 && out.run_dir.back() == '/') out.run_dir.pop_back();
  config.run.dir = out.run_dir;

  // The folder: new, or an existing one that holds no run yet.
  Cleanup cleanup;
  std::error_code ec;
  const bool existed = fs::exists(out.run_dir, ec);
  const RunFolder folder{out.run_dir};
  if (existed && (fs::exists(folder.RunYaml(), ec) || fs::exists(folder.EventsDir(), ec))) {
    return Status::Config(req.config_path + ": run.dir: '" + out.run_dir +
                          "' already holds a run (run.yaml or events/); choose another folder");
  }
  cleanup.SetDir(out.run_dir, !existed);
  for (const std::string& d :
       {folder.root, folder.LogsDir(), folder.EventsDir(), folder.CheckpointsDir()}) {
    const bool had = fs::exists(d, ec);
    fs::create_directories(d, ec);
    if (ec) return Status::Io(d + ": cannot create the run folder: " + ec.message());
    if (!had && d != folder.root) cleanup.AddFile(d);
  }

  // Freeze the resolved config and render the script.
  BATON_ASSIGN_OR_RETURN(const AlertsSection alerts, LoadRunAlerts(req.config_path));
  const std::string frozen = AppendAlerts(ToYaml(config), alerts);
  BATON_ASSIGN_OR_RETURN(
      out.script, RenderSbatchScript(config, {std::to_string(id), out.name, out.run_dir,
                                              req.baton_bin, GraceEnvValue(grace), exclude}));
  cleanup.AddFile(folder.RunYaml());
  BATON_RETURN_IF_ERROR(WriteTextAtomic(folder.RunYaml(), frozen));
  const std::string script_path = folder.SbatchScript();
  cleanup.AddFile(script_path);
  BATON_RETURN_IF_ERROR(WriteTextAtomic(script_path, out.script));
  ::chmod(script_path.c_str(), 0755);

  // Store the row's real values, then sbatch, then the job id — all in this transaction.
  BATON_RETURN_IF_ERROR(store->SetRunDirInTx(id, out.run_dir, frozen));
  BATON_ASSIGN_OR_RETURN(out.job_id, slurm.Submit(script_path));
  Status st = store->SetRunJobInTx(id, out.job_id, now);
  if (st.ok()) st = tx.Commit();
  if (!st.ok()) {
    // The job exists but the run does not: take the job back rather than leave an orphan.
    (void)slurm.Cancel(out.job_id);
    return st.Annotate("recording job " + out.job_id + " (cancelled it)");
  }
  cleanup.Disarm();
  return out;
}

}  // namespace baton
