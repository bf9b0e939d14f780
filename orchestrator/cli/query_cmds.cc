// `baton ls`, `baton show RUN`, `baton attempts RUN`, `baton checkpoints RUN` — each with --json.
// Each first syncs what it shows (ingest, then reconcile unless --no-sync), so the answer is
// current without a `baton watch` running.
#include <iostream>
#include <map>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "schema/checkpoint_manifest.h"

using nlohmann::json;

namespace baton {

namespace {

struct QueryOptions {
  std::string run;
  bool json = false;
  bool no_sync = false;
  int64_t limit = 100;
};

std::string StepRange(const AttemptRecord& a) {
  const int64_t s0 = a.step0.value_or(0);
  if (!a.last_step || *a.last_step <= s0) return "(none) @" + std::to_string(s0);
  return std::to_string(s0 + 1) + ".." + std::to_string(*a.last_step);
}

std::string WarmupRange(const AttemptRecord& a) {
  const int64_t s0 = a.step0.value_or(0);
  // 0-based index of the first step at full LR; the ramp is indices s0..until-1, which this
  // table shows 1-based like its step ranges: s0+1..until.
  int64_t until = 0;
  if (a.warmup_until) {
    until = *a.warmup_until;
  } else if (a.resume_warmup_steps > 0) {
    until = s0 + a.resume_warmup_steps - 1;  // min(1, (s+1)/K) reaches 1 at s = K-1
  }
  if (until <= s0) return "-";
  return std::to_string(s0 + 1) + ".." + std::to_string(until);
}

struct OpenedRun {
  std::unique_ptr<Store> store;
  RunRecord run;
};

// Opens the default store, finds the run the user named, syncs it.
Result<OpenedRun> OpenRun(const QueryOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return store.status();
  Result<RunRecord> run = (*store)->FindRun(o.run);
  if (!run.ok()) return run.status();
  std::vector<RunRecord> runs = {*run};
  if (Status st = SyncRuns(**store, &runs, !o.no_sync); !st.ok()) return st;
  return OpenedRun{std::move(store).value(), runs[0]};
}

int RunLs(const QueryOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<std::vector<RunRecord>> runs = (*store)->ListRuns(o.limit);
  if (!runs.ok()) return ReportError(runs.status());
  if (Status st = SyncRuns(**store, &*runs, !o.no_sync); !st.ok()) return ReportError(st);
  if (o.json) {
    json out = json::array();
    for (const RunRecord& r : *runs) {
      json j = RunJson(r);
      Result<std::vector<AttemptRecord>> attempts = (*store)->ListAttempts(r.id);
      if (!attempts.ok()) return ReportError(attempts.status());
      j["attempts"] = attempts->size();
      j["last_step"] = attempts->empty() || !attempts->back().last_step
                           ? json(nullptr)
                           : json(*attempts->back().last_step);
      out.push_back(j);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const RunRecord& r : *runs) {
    Result<std::vector<AttemptRecord>> attempts = (*store)->ListAttempts(r.id);
    if (!attempts.ok()) return ReportError(attempts.status());
    int64_t last = 0;
    for (const AttemptRecord& a : *attempts) last = std::max(last, a.last_step.value_or(0));
    rows.push_back({std::to_string(r.id), r.name, RunStatusName(r.status),
                    std::to_string(last) + "/" + std::to_string(r.target_steps),
                    std::to_string(attempts->size()), r.job_id.empty() ? "-" : r.job_id,
                    FormatTime(r.created_at), r.reason});
  }
  PrintTable(std::cout, {"ID", "NAME", "STATUS", "STEP", "ATTEMPTS", "JOB", "CREATED", "REASON"},
             rows);
  return 0;
}

void PrintAttemptTable(const std::vector<AttemptRecord>& attempts) {
  std::vector<std::vector<std::string>> rows;
  int i = 0;
  for (const AttemptRecord& a : attempts) {
    rows.push_back({std::to_string(i++), a.job_id + "." + std::to_string(a.restart_count),
                    StepRange(a), a.resume_mode.empty() ? "-" : a.resume_mode, WarmupRange(a),
                    a.end_reason.empty() ? (a.ended_at ? "-" : "(running)") : a.end_reason,
                    a.exit_code ? std::to_string(*a.exit_code) : "-", a.nodes,
                    FormatTime(a.started_at)});
  }
  PrintTable(
      std::cout,
      {"ATTEMPT", "JOB.RESTART", "STEPS", "RESUME", "WARMUP", "END", "EXIT", "NODES", "STARTED"},
      rows);
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
  int64_t last = 0;
  for (const AttemptRecord& a : *attempts) last = std::max(last, a.last_step.value_or(0));
  if (o.json) {
    json j = RunJson(*run);
    j["last_step"] = last;
    j["steps"] = *steps;
    j["superseded_steps"] = *all_steps - *steps;
    json list = json::array();
    for (size_t i = 0; i < attempts->size(); ++i) list.push_back(AttemptJson((*attempts)[i], i));
    j["attempts"] = list;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "run " << run->id << " (" << run->name << "): " << RunStatusName(run->status)
            << (run->reason.empty() ? "" : " — " + run->reason) << "\n"
            << "  step     " << last << " of " << run->target_steps << " (" << *steps
            << " step rows, " << (*all_steps - *steps) << " superseded)\n"
            << "  job      " << (run->job_id.empty() ? "-" : run->job_id) << "\n"
            << "  run dir  " << run->run_dir << "\n"
            << "  config   " << run->config_source << "\n"
            << "  created  " << FormatTime(run->created_at) << "\n\n";
  PrintAttemptTable(*attempts);
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
    json list = json::array();
    for (size_t i = 0; i < attempts->size(); ++i) list.push_back(AttemptJson((*attempts)[i], i));
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  PrintAttemptTable(*attempts);
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
  for (const CheckpointEntry& e : baton::ListCheckpoints(run->run_dir + "/checkpoints", false)) {
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
    std::cout << list.dump(2) << "\n";
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
