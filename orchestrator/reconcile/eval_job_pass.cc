#include "orchestrator/reconcile/eval_job_pass.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "orchestrator/reconcile/eval_job_plan.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/slurm/eval_job_script.h"
#include "orchestrator/slurm/job_state.h"
#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/eval_results.h"
#include "schema/run_config.h"
#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

// What the pass knows of one run in eval.mode job.
struct EvalRun {
  RunRecord run;
  RunConfig config;
  std::vector<EvalJobRecord> jobs;
};

std::string RunLabel(const RunRecord& run) { return "run " + std::to_string(run.id); }

// The log of an eval job: the last line that baton-train wrote, else the last line at all.
std::string LastLogLine(const std::string& run_dir, int64_t step, const std::string& job_id) {
  const std::string path =
      RunFolder{run_dir}.LogsDir() + "/eval_step_" + std::to_string(step) + "." + job_id + ".out";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 8192 ? size - 8192 : 0;
  in.seekg(from);
  std::string line, last, trainer;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.rfind("baton: eval exited", 0) == 0) continue;
    last = line;
    if (line.rfind("baton-train", 0) == 0) trainer = line;
  }
  std::string out = trainer.empty() ? last : trainer;
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  return out;
}

// Runs in eval.mode job that this pass may act on, with their rows.
Result<std::vector<EvalRun>> ReadEvalRuns(Store& store, const std::vector<RunRecord>& runs,
                                          const EvalJobOptions& o,
                                          std::vector<std::string>* changes) {
  std::vector<EvalRun> out;
  for (const RunRecord& run : runs) {
    if (run.run_dir.empty() || run.config.find("eval:") == std::string::npos) continue;
    if (o.acting_user != nullptr && !run.owner.empty() && run.owner != o.acting_user->name) {
      continue;
    }
    Result<RunConfig> config = LoadRunConfig(RunFolder{run.run_dir}.RunYaml());
    if (!config.ok()) {
      changes->push_back(RunLabel(run) + ": eval jobs: " + config.status().ToString());
      continue;
    }
    if (!config->eval.enabled() || config->eval.mode != EvalMode::kJob) continue;
    BATON_ASSIGN_OR_RETURN(std::vector<EvalJobRecord> jobs, ListEvalJobs(store, run.id));
    out.push_back({run, std::move(*config), std::move(jobs)});
  }
  return out;
}

std::set<int64_t> EvaluatedSteps(const RunRecord& run) {
  std::set<int64_t> out;
  for (const auto& [step, result] : ReadEvalResults(RunFolder{run.run_dir}).by_step) {
    out.insert(step);
  }
  return out;
}

// The committed checkpoints that are eval targets, by step (structure only: hashes are checked
// before a submission, not on every pass).
std::vector<int64_t> EvalTargets(const EvalRun& r) {
  std::vector<int64_t> out;
  for (const CheckpointEntry& c : ListCheckpoints(RunFolder{r.run.run_dir}.CheckpointsDir(),
                                                  /*check_hashes=*/false)) {
    if (IsEvalTarget(r.config, c.step)) out.push_back(c.step);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Each live row after what SLURM says; a requeued job's hold is ended when asked.
Status FollowLiveJobs(Store& store, SlurmClient& slurm, EvalRun& r, const JobTable& table,
                      const std::set<int64_t>& evaluated, const EvalJobOptions& o, double now,
                      std::vector<std::string>* changes) {
  for (EvalJobRecord& row : r.jobs) {
    if (!row.live()) continue;
    auto it = table.find(row.job_id);
    const std::optional<JobInfo> job =
        it == table.end() ? std::nullopt : std::optional<JobInfo>(it->second);
    const bool done = evaluated.count(row.step) > 0;
    const std::string log = done ? "" : LastLogLine(r.run.run_dir, row.step, row.job_id);
    const EvalJobRecord next = NextEvalJobState(row, job, done, log, now);
    if (o.release_requeue_holds && job && ParseJobState(job->state) == JobState::kPending &&
        job->restarts > 0 && job->reason.find("BeginTime") != std::string::npos) {
      if (slurm.ReleaseHold(row.job_id).ok()) {
        changes->push_back(RunLabel(r.run) + ": released the requeue hold of eval job " +
                           row.job_id + " (step " + std::to_string(row.step) + ")");
      }
    }
    if (next.state == row.state) continue;
    BATON_RETURN_IF_ERROR(UpdateEvalJob(store, next));
    if (next.state == kEvalJobFailed) {
      changes->push_back(RunLabel(r.run) + ": eval job " + row.job_id + " of step " +
                         std::to_string(row.step) + " failed (attempt " +
                         std::to_string(row.attempt) + "): " + next.reason);
    } else if (next.state == kEvalJobDone) {
      changes->push_back(RunLabel(r.run) + ": step " + std::to_string(row.step) +
                         " evaluated (eval job " + row.job_id + ")");
    }
    row = next;
  }
  return Status::Ok();
}

// A checkpoint that does not verify: recorded once (attempt 0), never submitted.
Status RecordUnverified(Store& store, const EvalRun& r, int64_t step, const Status& why, double now,
                        std::vector<std::string>* changes) {
  EvalJobRecord row;
  row.run_id = r.run.id;
  row.step = step;
  row.attempt = 0;
  row.state = kEvalJobUnverified;
  row.reason = why.message();
  row.submitted_at = row.updated_at = now;
  row.ended_at = now;
  Status st = store.Write([&]() -> Status { return InsertEvalJobInTx(store, row).status(); });
  if (st.code() == Code::kInvalidArgument) return Status::Ok();  // another watcher recorded it
  BATON_RETURN_IF_ERROR(st);
  changes->push_back(RunLabel(r.run) + ": checkpoint step " + std::to_string(step) +
                     " does not verify; not evaluated: " + row.reason);
  return Status::Ok();
}

// Whether `action` is still what the rows say, read inside the claim's transaction.
Result<bool> StillPlanned(Store& store, const EvalRun& r, const EvalJobAction& action) {
  BATON_ASSIGN_OR_RETURN(const std::vector<EvalJobRecord> rows, ListEvalJobs(store, r.run.id));
  for (const EvalJobAction& a : PlanEvalJobs({action.step}, EvaluatedSteps(r.run), rows)) {
    if (a.kind == action.kind && a.step == action.step && a.attempt == action.attempt) return true;
  }
  return false;
}

// The claim: re-read, sbatch and record in one write transaction (submitter.h's pattern). A job
// SLURM refuses (or a request that cannot be written) is a failed attempt, with SLURM's words.
Status SubmitEvalJob(Store& store, SlurmClient& slurm, const EvalRun& r,
                     const EvalJobAction& action, const EvalJobOptions& o, double now,
                     std::vector<std::string>* changes) {
  const std::string dir = RunFolder{r.run.run_dir}.CheckpointDir(action.step);
  const Status verified = VerifyCheckpoint(dir, /*check_hashes=*/true);
  if (!verified.ok()) return RecordUnverified(store, r, action.step, verified, now, changes);
  Result<std::string> script = RenderEvalJobScript(
      r.config, {r.run.id, r.run.name, r.run.run_dir, action.step, action.attempt, o.trainer_bin});
  if (!script.ok() && script.status().code() != Code::kConfig) return script.status();
  BATON_ASSIGN_OR_RETURN(Transaction tx, store.Begin());
  BATON_ASSIGN_OR_RETURN(const bool planned, StillPlanned(store, r, action));
  if (!planned) return Status::Ok();  // another watcher claimed it; the rollback changes nothing
  Result<std::string> job = script.status();
  if (script.ok()) {
    const std::string path = EvalJobScriptPath(r.run.run_dir, action.step, action.attempt);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    BATON_RETURN_IF_ERROR(WriteTextAtomic(path, *script));
    ::chmod(path.c_str(), 0755);
    job = slurm.Submit(path);
    if (!job.ok() && job.status().code() != Code::kConfig) return job.status();
  }
  EvalJobRecord row;
  row.run_id = r.run.id;
  row.step = action.step;
  row.attempt = action.attempt;
  row.submitted_at = row.updated_at = now;
  if (job.ok()) {
    row.job_id = *job;
  } else {
    row.state = kEvalJobFailed;
    row.reason = "not submitted: " + job.status().message();
    row.ended_at = now;
  }
  Status st = InsertEvalJobInTx(store, row).status();
  if (st.ok()) st = tx.Commit();
  if (!st.ok()) {
    if (job.ok()) (void)slurm.Cancel(*job);  // a job no store knows of would be submitted again
    return st.Annotate("recording the eval job of step " + std::to_string(action.step) +
                       (job.ok() ? " (cancelled job " + *job + ")" : ""));
  }
  changes->push_back(RunLabel(r.run) + ": " +
                     (job.ok() ? "submitted eval job " + *job + " for step "
                               : "eval job not submitted for step ") +
                     std::to_string(action.step) + " (attempt " + std::to_string(action.attempt) +
                     ")" + (job.ok() ? "" : ": " + row.reason));
  return Status::Ok();
}

Status ReportFailure(Store& store, const EvalRun& r, const EvalJobAction& action,
                     const EvalJobOptions& o, double now, std::vector<std::string>* changes) {
  for (const EvalJobRecord& row : r.jobs) {
    if (row.id != action.row_id) continue;
    if (o.on_failure) BATON_RETURN_IF_ERROR(o.on_failure(store, r.run, row));
    BATON_RETURN_IF_ERROR(MarkEvalJobReported(store, row.id, now));
    changes->push_back(RunLabel(r.run) + ": the eval of step " + std::to_string(row.step) +
                       " failed " + std::to_string(row.attempt) +
                       " times; not retried: " + row.reason);
  }
  return Status::Ok();
}

}  // namespace

Status EvalJobPass(Store& store, SlurmClient& slurm, const std::vector<RunRecord>& runs,
                   const EvalJobOptions& o, double now, std::vector<std::string>* changes) {
  BATON_ASSIGN_OR_RETURN(std::vector<EvalRun> evals, ReadEvalRuns(store, runs, o, changes));
  std::vector<std::string> ids;
  for (const EvalRun& r : evals) {
    for (const EvalJobRecord& j : r.jobs) {
      if (j.live()) ids.push_back(j.job_id);
    }
  }
  JobTable table;
  if (!ids.empty()) {
    BATON_ASSIGN_OR_RETURN(table, slurm.GetJobs(ids));
  }
  for (EvalRun& r : evals) {
    // Read after SLURM answered: a job that ended has written its result by then.
    const std::set<int64_t> evaluated = EvaluatedSteps(r.run);
    BATON_RETURN_IF_ERROR(FollowLiveJobs(store, slurm, r, table, evaluated, o, now, changes));
    for (const EvalJobAction& a : PlanEvalJobs(EvalTargets(r), evaluated, r.jobs)) {
      if (a.kind == EvalJobAction::Kind::kReport) {
        BATON_RETURN_IF_ERROR(ReportFailure(store, r, a, o, now, changes));
        continue;
      }
      if (o.trainer_bin.empty()) {
        return Status::Unavailable(RunLabel(r.run) +
                                   ": eval.mode job needs baton-train, which was not found "
                                   "(set BATON_TRAIN_BIN)");
      }
      BATON_RETURN_IF_ERROR(SubmitEvalJob(store, slurm, r, a, o, now, changes));
    }
  }
  return Status::Ok();
}

Result<std::vector<RunRecord>> EvalJobRuns(Store& store, const std::vector<RunRecord>& runs,
                                           double ended_since) {
  std::vector<RunRecord> out = runs;
  std::set<int64_t> have;
  for (const RunRecord& r : runs) have.insert(r.id);
  BATON_ASSIGN_OR_RETURN(std::vector<RunRecord> ended, store.ListRunsEndedSince(ended_since));
  for (RunRecord& r : ended) {
    if (have.insert(r.id).second) out.push_back(std::move(r));
  }
  BATON_ASSIGN_OR_RETURN(const std::vector<int64_t> live, RunsWithLiveEvalJobs(store));
  for (const int64_t id : live) {
    if (!have.insert(id).second) continue;
    BATON_ASSIGN_OR_RETURN(RunRecord r, store.GetRun(id));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace baton
