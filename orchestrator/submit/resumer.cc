#include "orchestrator/submit/resumer.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "orchestrator/nodes/node_ledger.h"
#include "orchestrator/slurm/job_state.h"
#include "orchestrator/submit/grace_check.h"
#include "orchestrator/submit/memory_check.h"
#include "orchestrator/submit/run_cluster.h"
#include "orchestrator/submit/sbatch_script.h"
#include "schema/alerts_config.h"
#include "schema/atomic_file.h"
#include "schema/config_keys.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

bool IsSlurmKey(const std::string& key) { return key.rfind("slurm.", 0) == 0; }

// Job states in which the job's processes may run: resuming then would start a second trainer.
bool JobMayRun(const std::string& state) {
  using S = JobState;
  return IsAnyOf(ParseJobState(state), {S::kRunning, S::kCompleting, S::kConfiguring, S::kSuspended,
                                        S::kStageOut, S::kSignaling});
}

// Puts back the files ResumeRun replaced, unless disarmed.
class Restore {
 public:
  ~Restore() {
    if (!armed_) return;
    for (const auto& [path, text] : saved_) (void)WriteTextAtomic(path, text);
  }
  void Save(const std::string& path, std::string text) {
    saved_.emplace_back(path, std::move(text));
  }
  void Disarm() { armed_ = false; }

 private:
  bool armed_ = true;
  std::vector<std::pair<std::string, std::string>> saved_;
};

// The folder the write probe measures for a run: the one that holds its folder, as at submit
// (so the probe cached then serves).
std::string ProbeFolderOf(const std::string& run_dir) {
  std::string s = fs::path(run_dir).lexically_normal().parent_path().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

Result<std::string> ReadText(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::Data(path + ": missing");
  BATON_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return text;
}

}  // namespace

Result<std::vector<std::string>> ConfigDifferences(const std::string& old_yaml,
                                                   const std::string& new_yaml) {
  BATON_ASSIGN_OR_RETURN(const auto a, FlattenConfigKeys(old_yaml));
  BATON_ASSIGN_OR_RETURN(const auto b, FlattenConfigKeys(new_yaml));
  std::vector<std::string> out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) {
      out.push_back(k + ": " + v + " -> (unset)");
    } else if (it->second != v) {
      out.push_back(k + ": " + v + " -> " + it->second);
    }
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) out.push_back(k + ": (unset) -> " + v);
  }
  return out;
}

namespace {

// How messages name the run.
std::string Who(const RunRecord& run) {
  return "run " + std::to_string(run.id) + " (" + run.name + ")";
}

// Refuses a run that cannot be resumed: one that completed, or whose job may be running (two
// trainers, one folder). Returns the job to take back once the new one is queued: the run's
// job when it waits in the queue, else "".
Result<std::string> CheckResumable(const RunRecord& run, SlurmClient& slurm) {
  const std::string who = Who(run);
  if (run.status == RunStatus::kCompleted) {
    return Status::Config(who +
                          " is COMPLETED: it reached run.steps; resume continues a run that "
                          "stopped early, submit a new run to train further");
  }
  std::string waiting_job;
  if (!IsTerminal(run.status) && !run.job_id.empty()) {
    BATON_ASSIGN_OR_RETURN(const std::optional<JobInfo> job, slurm.GetJob(run.job_id));
    if (job && JobMayRun(job->state)) {
      return Status::InvalidArgument(who + ": its job " + run.job_id + " is " + job->state +
                                     "; resume takes a run that stopped or waits. Wait for the "
                                     "job to stop, or `baton cancel " +
                                     std::to_string(run.id) + "` first");
    }
    if (job && ParseJobState(job->state) == JobState::kPending) waiting_job = run.job_id;
  }
  return waiting_job;
}

// The config the new job runs: the frozen one, or the edited file when it differs from it in
// `slurm:` keys only (those differences go to `changed`).
Result<RunConfig> ResumedConfig(const ResumeRunRequest& req, const RunRecord& run,
                                const RunFolder& folder, const std::string& old_yaml,
                                std::vector<std::string>* changed) {
  BATON_ASSIGN_OR_RETURN(RunConfig config,
                         ParseRunConfig(old_yaml, folder.RunYaml(), RunConfigOptions{}));
  if (req.config_path.empty()) return config;
  BATON_ASSIGN_OR_RETURN(RunConfig edited, LoadRunConfig(req.config_path));
  // The run keeps its name and folder whatever the edited file says about them.
  edited.run.name = config.run.name;
  edited.run.dir = config.run.dir;
  BATON_ASSIGN_OR_RETURN(std::vector<std::string> diff,
                         ConfigDifferences(ToYaml(config), ToYaml(edited)));
  std::string refused;
  for (const std::string& d : diff) {
    if (IsSlurmKey(d)) {
      changed->push_back(d);
    } else {
      refused += "\n  " + d;
    }
  }
  if (!refused.empty()) {
    return Status::Config(req.config_path + ": only slurm: keys may change when resuming " +
                          Who(run) + "; these differ from " + folder.RunYaml() + ":" + refused);
  }
  return edited;
}

// What the new job is, settled before anything is written.
struct ResumeJob {
  std::string cluster;
  std::string frozen;  // the new run.yaml
  std::string script;  // the new sbatch.sh
};

// Submit's checks on the config the new job runs, then its files rendered. The memory per rank
// and the stop save against the grace come from one plan; the job is told the grace
// (BATON_GRACE_S) as at submit. Fills `out`'s budget, warnings and refused exclusions.
Result<ResumeJob> PrepareResumeJob(Store& store, SlurmClient& slurm, const ResumeRunRequest& req,
                                   const RunRecord& run, const RunFolder& folder,
                                   const std::string& old_yaml, const RunConfig& config, double now,
                                   ResumeRunResult* out) {
  const std::string checked = req.config_path.empty() ? folder.RunYaml() : req.config_path;
  std::string no_plan;
  const std::optional<MemoryPlanReport> plan =
      PlanIfPossible(config, checked, req.trainer_bin, &no_plan);
  BATON_RETURN_IF_ERROR(CheckMemoryPlan(config, checked, req.trainer_bin, plan ? &*plan : nullptr));
  GraceCheck grace;
  BATON_RETURN_IF_ERROR(CheckGrace(config, checked, req.strict, plan ? &*plan : nullptr, no_plan,
                                   slurm, &store, ProbeFolderOf(run.run_dir), now, &grace));
  out->budget = grace.budget;
  out->warnings = grace.warnings;

  ResumeJob job;
  BATON_ASSIGN_OR_RETURN(job.cluster, ResolveRunCluster(config.slurm, checked, slurm));
  // The alerts section stays as frozen, or is the edited file's.
  BATON_ASSIGN_OR_RETURN(const AlertsSection alerts,
                         req.config_path.empty() ? RunAlertsFromConfig(old_yaml, folder.RunYaml())
                                                 : LoadRunAlerts(req.config_path));
  job.frozen = AppendAlerts(ToYaml(config), alerts);
  BATON_ASSIGN_OR_RETURN(
      const std::string exclude,
      ExcludeForNewJob(&store, slurm, job.cluster, config.slurm.partition, config.slurm.nodes, now,
                       &out->warnings, &out->exclusion_refused));
  BATON_ASSIGN_OR_RETURN(
      job.script, RenderSbatchScript(config, {std::to_string(run.id), run.name, run.run_dir,
                                              req.baton_bin, GraceEnvValue(grace), exclude}));
  return job;
}

// Replaces run.yaml and sbatch.sh and removes `baton cancel`'s mark (which would end the new job
// at its start); `restore` keeps what each held, to put back if anything fails.
Status ReplaceRunFiles(const RunFolder& folder, const std::string& old_yaml,
                       const std::string& old_script, const ResumeJob& job, Restore* restore) {
  restore->Save(folder.RunYaml(), old_yaml);
  restore->Save(folder.SbatchScript(), old_script);
  BATON_RETURN_IF_ERROR(WriteTextAtomic(folder.RunYaml(), job.frozen));
  BATON_RETURN_IF_ERROR(WriteTextAtomic(folder.SbatchScript(), job.script));
  ::chmod(folder.SbatchScript().c_str(), 0755);
  std::error_code ec;
  if (fs::exists(folder.CancelMark(), ec)) {
    BATON_ASSIGN_OR_RETURN(const std::string mark, ReadText(folder.CancelMark()));
    restore->Save(folder.CancelMark(), mark);
    if (!fs::remove(folder.CancelMark(), ec) || ec) {
      return Status::Io("cannot remove " + folder.CancelMark() + ": " + ec.message());
    }
  }
  return Status::Ok();
}

// The status change's reason: the new job, and what changed.
std::string ResumeReason(const std::string& job_id, const std::vector<std::string>& changed) {
  std::string reason = "resumed by user as job " + job_id;
  if (!changed.empty()) {
    reason += " (";
    for (size_t i = 0; i < changed.size(); ++i) reason += (i ? "; " : "") + changed[i];
    reason += ")";
  }
  return reason;
}

// Inside the caller's transaction: the run's new config and limits and budget, then sbatch, then
// the waiting job taken back, the new job and the status recorded, and the commit. A new job
// whose run could not be recorded is cancelled.
Status SubmitAndRecord(Store& store, SlurmClient& slurm, Transaction& tx, const RunRecord& run,
                       const RunFolder& folder, const RunConfig& config, const ResumeJob& job,
                       const std::string& waiting_job, double now, ResumeRunResult* out) {
  BATON_RETURN_IF_ERROR(store.SetRunDirInTx(run.id, run.run_dir, job.frozen));
  BATON_RETURN_IF_ERROR(
      store.SetRunLimitsInTx(run.id, config.slurm.max_restarts, config.slurm.max_failures));
  if (out->budget) {
    out->budget->run_id = run.id;
    BATON_RETURN_IF_ERROR(store.UpsertStopSaveBudgetInTx(*out->budget));
  }
  BATON_ASSIGN_OR_RETURN(out->job_id, slurm.Submit(folder.SbatchScript()));
  Status st = Status::Ok();
  if (!waiting_job.empty()) {
    st = slurm.Cancel(waiting_job);
    if (st.ok()) out->cancelled_job = waiting_job;
  }
  const std::string reason = ResumeReason(out->job_id, out->changed);
  if (st.ok()) st = store.SetRunJobInTx(run.id, out->job_id, now);
  if (st.ok()) st = store.SetRunClusterInTx(run.id, job.cluster);
  if (st.ok()) st = store.SetRunStatusInTx(run.id, RunStatus::kPending, reason, now);
  if (st.ok()) st = tx.Commit();
  if (!st.ok()) {
    (void)slurm.Cancel(out->job_id);
    return st.Annotate("resuming " + Who(run) + " as job " + out->job_id + " (cancelled it)");
  }
  return Status::Ok();
}

}  // namespace

Result<ResumeRunResult> ResumeRun(Store& store, SlurmClient& slurm, const ResumeRunRequest& req,
                                  double now) {
  BATON_ASSIGN_OR_RETURN(const RunRecord run, store.FindRun(req.run));
  ResumeRunResult out;
  out.run_id = run.id;
  out.name = run.name;
  out.run_dir = run.run_dir;
  out.previous_status = Name(run.status);
  BATON_ASSIGN_OR_RETURN(const std::string waiting_job, CheckResumable(run, slurm));

  const RunFolder folder{run.run_dir};
  BATON_ASSIGN_OR_RETURN(const std::string old_yaml, ReadText(folder.RunYaml()));
  BATON_ASSIGN_OR_RETURN(const RunConfig config,
                         ResumedConfig(req, run, folder, old_yaml, &out.changed));
  BATON_ASSIGN_OR_RETURN(const ResumeJob job, PrepareResumeJob(store, slurm, req, run, folder,
                                                               old_yaml, config, now, &out));
  BATON_ASSIGN_OR_RETURN(const std::string old_script, ReadText(folder.SbatchScript()));

  BATON_ASSIGN_OR_RETURN(Transaction tx, store.Begin());
  Restore restore;
  BATON_RETURN_IF_ERROR(ReplaceRunFiles(folder, old_yaml, old_script, job, &restore));
  BATON_RETURN_IF_ERROR(
      SubmitAndRecord(store, slurm, tx, run, folder, config, job, waiting_job, now, &out));
  restore.Disarm();
  return out;
}

}  // namespace baton
