// `baton ls`, `baton show RUN`, `baton attempts RUN`, `baton checkpoints RUN` — each with --json.
// Each first syncs what it shows (ingest, then reconcile unless --no-sync), so the answer is
// current without a `baton watch` running.
//
// Text the trainer or the data wrote (messages, episode ids, the run's reason) reaches the
// terminal through PrintableText: control characters are shown as escapes, never sent raw.
// Step numbers in the text output are 1-based like the trainer's progress line and messages;
// --json keeps the events' 0-based indices.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/cli/eval_jobs_text.h"
#include "orchestrator/cli/eval_text.h"
#include "orchestrator/cli/history_text.h"
#include "orchestrator/history/attempt_log.h"
#include "orchestrator/history/run_timeline.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/store/attempt_evidence.h"
#include "orchestrator/store/stop_save_summary.h"
#include "orchestrator/store/store_evals.h"
#include "orchestrator/store/time_bucket_store.h"
#include "orchestrator/store/time_buckets_json.h"
#include "schema/checkpoint_manifest.h"
#include "schema/clock.h"
#include "schema/event_records.h"
#include "schema/events.h"
#include "schema/run_folder.h"
#include "schema/step_numbers.h"

using nlohmann::json;

namespace baton {

namespace {

// Non-finite steps `baton show` lists in text (the count is exact); --json lists more.
inline constexpr size_t kShownNonfiniteSteps = 5;
inline constexpr int64_t kJsonNonfiniteSteps = 100;
// Lines of the last attempt's log `baton show` prints for a failed or requeued run.
inline constexpr size_t kShownLogLines = 10;

struct QueryOptions {
  std::string run;
  bool json = false;
  bool no_sync = false;
  int64_t limit = 100;
  RunFilter filter;  // ls --owner, --cluster
};

struct OpenedRun {
  std::unique_ptr<Store> store;
  RunRecord run;
};

// Opens the default store, finds the run the user named, syncs it.
Result<OpenedRun> OpenRun(const QueryOptions& o) {
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenDefaultStore());
  BATON_ASSIGN_OR_RETURN(RunRecord run, store->FindRun(o.run));
  std::vector<RunRecord> runs = {std::move(run)};
  BATON_RETURN_IF_ERROR(SyncQueriedRuns(*store, &runs, !o.no_sync));
  return OpenedRun{std::move(store), std::move(runs[0])};
}

// The CLI's JSON of a run: the record's (record_json.h, as the web API's) plus `run_id`, the
// same id under the name `baton submit --json` prints.
json CliRunJson(const RunRecord& r) {
  json j = RunJson(r);
  j["run_id"] = r.id;
  return j;
}

// The attempt list of `show` and `attempts`: each attempt numbered from 1 like the table.
json CliAttemptsJson(const std::vector<AttemptRecord>& attempts) {
  json list = json::array();
  for (size_t i = 0; i < attempts.size(); ++i) {
    json j = AttemptJson(attempts[i]);
    j["attempt"] = AttemptNumber(static_cast<int64_t>(i));
    const std::optional<SlurmStateKind> kind = ClassifySlurmState(attempts[i]);
    j["slurm_state_kind"] = kind ? json(Name(*kind)) : json(nullptr);
    list.push_back(std::move(j));
  }
  return list;
}

int RunLs(const QueryOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<std::vector<RunRecord>> runs = (*store)->ListRuns(o.limit, /*offset=*/0, o.filter);
  if (!runs.ok()) return ReportError(runs.status());
  if (Status st = SyncQueriedRuns(**store, &*runs, !o.no_sync); !st.ok()) return ReportError(st);
  if (o.json) {
    json out = json::array();
    for (const RunRecord& r : *runs) {
      json j = CliRunJson(r);
      Result<std::vector<AttemptRecord>> attempts = (*store)->ListAttempts(r.id);
      if (!attempts.ok()) return ReportError(attempts.status());
      j["attempts"] = attempts->size();
      j["last_step"] = attempts->empty() || !attempts->back().last_step
                           ? json(nullptr)
                           : json(*attempts->back().last_step);
      out.push_back(j);
    }
    std::cout << DumpJson(out, 2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const RunRecord& r : *runs) {
    Result<std::vector<AttemptRecord>> attempts = (*store)->ListAttempts(r.id);
    if (!attempts.ok()) return ReportError(attempts.status());
    int64_t last = 0;
    for (const AttemptRecord& a : *attempts) last = std::max(last, a.last_step.value_or(0));
    rows.push_back({std::to_string(r.id), r.name, r.owner.empty() ? "-" : r.owner, Name(r.status),
                    std::to_string(last) + "/" + std::to_string(r.target_steps),
                    std::to_string(attempts->size()), r.job_id.empty() ? "-" : r.job_id,
                    FormatTime(r.created_at), r.reason});
  }
  PrintTable(std::cout,
             {"ID", "NAME", "OWNER", "STATUS", "STEP", "ATTEMPTS", "JOB", "CREATED", "REASON"},
             rows);
  return 0;
}

// The skipped steps of `baton show`: not applied (weights and optimizer state untouched), with
// the episodes of each step listed so the data can be checked.
void PrintSkippedSteps(const NonfiniteCounts& counts, const std::vector<StepRecord>& skipped,
                       const std::vector<AttemptRecord>& attempts) {
  if (counts.effective > 0 || counts.superseded > 0) {
    std::cout << "  skipped  " << counts.effective << " non-finite step"
              << (counts.effective == 1 ? "" : "s") << " (not applied)";
    if (counts.superseded > 0) {
      std::cout << ", " << counts.superseded << " more in steps redone after a resume";
    }
    std::cout << "\n";
    for (const StepRecord& s : skipped) {
      std::cout << "           step " << StepNumber(s.step) << " (attempt "
                << AttemptNumberOf(attempts, s.attempt_id)
                << "): " << EpisodeList(s.nonfinite_episodes) << "\n";
    }
    if (counts.effective > static_cast<int64_t>(skipped.size())) {
      std::cout << "           ... " << counts.effective - static_cast<int64_t>(skipped.size())
                << " more (--json lists up to " << kJsonNonfiniteSteps << ")\n";
    }
  }
}

int RunShow(const QueryOptions& o) {
  Result<OpenedRun> opened = OpenRun(o);
  if (!opened.ok()) return ReportError(opened.status());
  Store* store = opened->store.get();
  const RunRecord* run = &opened->run;
  Result<std::vector<AttemptRecord>> attempts = store->ListAttempts(run->id);
  if (!attempts.ok()) return ReportError(attempts.status());
  Result<int64_t> steps = store->CountSteps(run->id, /*include_superseded=*/false);
  Result<int64_t> all_steps = store->CountSteps(run->id, /*include_superseded=*/true);
  if (!steps.ok()) return ReportError(steps.status());
  if (!all_steps.ok()) return ReportError(all_steps.status());
  Result<NonfiniteCounts> nonfinite = store->CountNonfiniteSteps(run->id);
  if (!nonfinite.ok()) return ReportError(nonfinite.status());
  Result<std::vector<StepRecord>> skipped = store->ListNonfiniteSteps(
      run->id, /*include_superseded=*/false, o.json ? kJsonNonfiniteSteps : kShownNonfiniteSteps);
  if (!skipped.ok()) return ReportError(skipped.status());
  int64_t last = 0;
  for (const AttemptRecord& a : *attempts) last = std::max(last, a.last_step.value_or(0));
  Result<StopSaveSummary> stop_save = ReadStopSaveSummary(*store, run->id);
  if (!stop_save.ok()) return ReportError(stop_save.status());
  Result<RunTimeBuckets> time = TimeBucketsOf(*store, *run, UnixTimeNow());
  if (!time.ok()) return ReportError(time.status());
  Result<std::vector<EvalRecord>> evals = ListEvals(*store, run->id);
  if (!evals.ok()) return ReportError(evals.status());
  Result<std::vector<EvalJobRecord>> eval_jobs = ListEvalJobs(*store, run->id);
  if (!eval_jobs.ok()) return ReportError(eval_jobs.status());
  if (o.json) {
    json j = CliRunJson(*run);
    j["time"] = TimeBucketsJson(*time, /*first_attempt=*/AttemptNumber(0));
    j["last_step"] = last;
    j["steps"] = *steps;
    j["superseded_steps"] = *all_steps - *steps;
    j["nonfinite_steps"] = nonfinite->effective;
    j["nonfinite_superseded"] = nonfinite->superseded;
    json skipped_list = json::array();
    for (const StepRecord& s : *skipped) {
      // The CLI has always listed fewer fields per skipped step than the web API.
      skipped_list.push_back(
          WithoutKeys(NonfiniteStepJson(s, AttemptNumberOf(*attempts, s.attempt_id)),
                      {"loss_video", "loss_action", "time"}));
    }
    j["nonfinite"] = skipped_list;
    j["attempts"] = CliAttemptsJson(*attempts);
    j["stop_save"] = StopSaveJson(*stop_save);
    j["evals"] = EvalsJson(*evals);
    j["eval_jobs"] = EvalJobsJson(*eval_jobs);
    std::cout << DumpJson(j, 2) << "\n";
    return 0;
  }
  std::cout << "run " << run->id << " (" << PrintableText(run->name) << "): " << Name(run->status)
            << (run->reason.empty() ? "" : " — " + PrintableText(run->reason)) << "\n"
            << "  step     " << last << " of " << run->target_steps << " (" << *steps
            << " step rows, " << (*all_steps - *steps) << " superseded)\n";
  PrintSkippedSteps(*nonfinite, *skipped, *attempts);
  std::cout << "  job      " << (run->job_id.empty() ? "-" : run->job_id) << "\n"
            << "  run dir  " << run->run_dir << "\n"
            << "  config   " << run->config_source << "\n"
            << "  created  " << FormatTime(run->created_at) << "\n";
  const std::string stop_line = StopSaveLine(*stop_save);
  if (!stop_line.empty()) std::cout << "  stop save " << PrintableText(stop_line) << "\n";
  PrintEvalJobs(*eval_jobs);
  PrintTimeBuckets(*time);
  PrintEvals(*evals);
  std::cout << "\n";
  PrintAttemptTable(*attempts, ScheduleFromConfig(run->config));
  // Why it stopped, in the job's own output: the tail of the last attempt's log.
  if (!attempts->empty() &&
      (run->status == RunStatus::kFailed || run->status == RunStatus::kRequeued)) {
    PrintLogTail(run->run_dir, attempts->back(), kShownLogLines);
  }
  return 0;
}

int RunAttempts(const QueryOptions& o) {
  Result<OpenedRun> opened = OpenRun(o);
  if (!opened.ok()) return ReportError(opened.status());
  Store* store = opened->store.get();
  const RunRecord* run = &opened->run;
  Result<std::vector<AttemptRecord>> attempts = store->ListAttempts(run->id);
  if (!attempts.ok()) return ReportError(attempts.status());
  if (o.json) {
    std::cout << DumpJson(CliAttemptsJson(*attempts), 2) << "\n";
    return 0;
  }
  PrintAttemptTable(*attempts, ScheduleFromConfig(run->config));
  return 0;
}

int RunCheckpoints(const QueryOptions& o) {
  Result<OpenedRun> opened = OpenRun(o);
  if (!opened.ok()) return ReportError(opened.status());
  Store* store = opened->store.get();
  const RunRecord* run = &opened->run;
  Result<std::vector<CheckpointRecord>> recorded = store->ListCheckpoints(run->id);
  if (!recorded.ok()) return ReportError(recorded.status());
  // What the trainer reported, joined with what is on disk now (sizes only: hashing every
  // checkpoint on each `baton checkpoints` would be slow; the launcher checks hashes).
  std::map<int64_t, CheckpointEntry> on_disk;
  for (const CheckpointEntry& e :
       baton::ListCheckpoints(RunFolder{run->run_dir}.CheckpointsDir(), false)) {
    on_disk[e.step] = e;
  }
  std::map<int64_t, CheckpointRecord, std::greater<>> all;
  for (const CheckpointRecord& c : *recorded) all[c.step] = c;
  for (const auto& [step, e] : on_disk) {
    if (!all.count(step)) {
      CheckpointRecord c;
      c.step = step;
      c.path = e.path;
      c.reason = "(not reported)";
      all[step] = c;
    }
  }
  auto disk_state = [&](int64_t step) -> std::string {
    auto it = on_disk.find(step);
    if (it == on_disk.end()) return "deleted";
    return it->second.valid ? "valid" : "invalid: " + it->second.problem;
  };
  if (o.json) {
    json list = json::array();
    for (const auto& [step, c] : all) {
      json j = CheckpointJson(c);
      j["on_disk"] = disk_state(step);
      j["valid"] = disk_state(step) == "valid";
      list.push_back(j);
    }
    std::cout << DumpJson(list, 2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [step, c] : all) {
    rows.push_back({std::to_string(step), c.reason, std::to_string(c.bytes),
                    std::isnan(c.seconds) ? "-" : std::to_string(c.seconds).substr(0, 6),
                    disk_state(step), c.path});
  }
  PrintTable(std::cout, {"STEP", "REASON", "BYTES", "SAVE_S", "ON_DISK", "PATH"}, rows);
  return 0;
}

CLI::App* AddRunCommand(CLI::App& app, const char* name, const char* help,
                        std::shared_ptr<QueryOptions> o) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("run", o->run, "Run id or name")->required();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--no-sync", o->no_sync, "Do not ask SLURM (show what is ingested)");
  return cmd;
}

}  // namespace

void AddQueryCommands(CLI::App& app, int* rc) {
  auto ls = std::make_shared<QueryOptions>();
  CLI::App* cmd = app.add_subcommand("ls", "List runs, newest first");
  cmd->add_flag("--json", ls->json, "Print JSON");
  cmd->add_flag("--no-sync", ls->no_sync, "Do not ask SLURM (show what is ingested)");
  cmd->add_option("--limit", ls->limit, "Most runs listed (default 100)");
  cmd->add_option("--owner", ls->filter.owner, "Only runs this Unix user submitted");
  cmd->add_option("--cluster", ls->filter.cluster, "Only runs on this SLURM cluster");
  cmd->callback([ls, rc] { *rc = RunLs(*ls); });

  auto show = std::make_shared<QueryOptions>();
  AddRunCommand(app, "show", "A run's status and its attempt table", show)->callback([show, rc] {
    *rc = RunShow(*show);
  });
  auto attempts = std::make_shared<QueryOptions>();
  AddRunCommand(app, "attempts", "A run's attempts (one per SLURM job start)", attempts)
      ->callback([attempts, rc] { *rc = RunAttempts(*attempts); });
  auto checkpoints = std::make_shared<QueryOptions>();
  AddRunCommand(app, "checkpoints", "A run's checkpoints, reported and on disk", checkpoints)
      ->callback([checkpoints, rc] { *rc = RunCheckpoints(*checkpoints); });
}

}  // namespace baton
