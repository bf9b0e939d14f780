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
#include "orchestrator/http/attempt_log.h"
#include "orchestrator/http/run_timeline.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/store/attempt_evidence.h"
#include "orchestrator/store/stop_save_summary.h"
#include "orchestrator/store/time_bucket_store.h"
#include "orchestrator/store/time_buckets_json.h"
#include "schema/checkpoint_manifest.h"
#include "schema/clock.h"
#include "schema/event_records.h"
#include "schema/events.h"
#include "schema/run_folder.h"

using nlohmann::json;

namespace baton {

namespace {

// Non-finite steps `baton show` lists in text (the count is exact); --json lists more.
inline constexpr size_t kShownNonfiniteSteps = 5;
inline constexpr int64_t kJsonNonfiniteSteps = 100;
// Lines of the last attempt's log `baton show` prints for a failed or requeued run.
inline constexpr size_t kShownLogLines = 10;

// Episode ids shown per skipped step in text.
inline constexpr size_t kShownEpisodeIds = 8;

struct QueryOptions {
  std::string run;
  bool json = false;
  bool no_sync = false;
  int64_t limit = 100;
};

// Steps and ranges show 1-based like the trainer's progress line: indices s0..n-1 are s0+1..n.
std::string StepRange(const AttemptRecord& a) {
  const int64_t s0 = a.step0.value_or(0);
  if (!a.last_step || *a.last_step <= s0) return "(none) @" + std::to_string(s0);
  return std::to_string(s0 + 1) + ".." + std::to_string(*a.last_step);
}

std::string WarmupColumn(const AttemptRecord& a, const ExpectedSchedule& schedule) {
  const WarmupRange w = AttemptWarmup(
      a, schedule, a.last_step ? std::optional<int64_t>(*a.last_step - 1) : std::nullopt);
  if (w.empty()) return "-";
  return std::to_string(w.from + 1) + ".." + std::to_string(w.until);
}

// `s` with every control character (C0, DEL, and C1 as UTF-8) written as an escape, so a message
// or an id can neither move the cursor nor rewrite the terminal; other UTF-8 passes unchanged.
std::string PrintableText(const std::string& s) {
  std::string out;
  char buf[8];
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(s[++i]));
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// "3003.0", and "3003.0.2" for the second restart of the trainer inside that job start.
std::string AttemptLabel(const AttemptRecord& a) {
  return a.job_id + "." + std::to_string(a.restart_count) +
         (a.in_job_seq > 0 ? "." + std::to_string(a.in_job_seq) : "");
}

// "-" for a job start, "#2 (hang)" for the second in-job restart, caused by a hang.
std::string InJobColumn(const AttemptRecord& a) {
  if (a.in_job_seq == 0) return "-";
  return "#" + std::to_string(a.in_job_seq) + " (" + PrintableText(a.restart_cause.value_or("?")) +
         ")";
}

// How an attempt ended, in one line: the launcher's decision and reason, the exit code, then the
// trainer's own words (its segment_end message), e.g.
//   failed: data_error — exit 65: data/episodes/ep_000003.safetensors: tensor latents holds ...
//   requeued: preempted — exit 75 (trainer: signal)
//   requeued: crashed — exit 139 (the trainer wrote no segment_end)
std::string AttemptOutcome(const AttemptRecord& a) {
  if (a.action.empty() && a.end_reason.empty() && !a.ended_at) {
    return a.trainer_message.empty() ? "running" : "running: " + PrintableText(a.trainer_message);
  }
  std::string word = a.action == ExitActionName(ExitAction::kDone)      ? "done"
                     : a.action == ExitActionName(ExitAction::kRequeue) ? "requeued"
                     : a.action == ExitActionName(ExitAction::kFail)    ? "failed"
                     : a.action == ExitActionName(ExitAction::kRestart) ? "restarted in the job"
                                                                        : "ended";
  std::string out = word + ": " + (a.end_reason.empty() ? "-" : a.end_reason);
  if (a.exit_code) {
    out += " — exit " + std::to_string(*a.exit_code);
    if (a.trainer_exit_code && *a.trainer_exit_code != *a.exit_code) {
      out += " (trainer exit " + std::to_string(*a.trainer_exit_code) + ")";
    }
  } else if (a.trainer_exit_code) {
    out += " — trainer exit " + std::to_string(*a.trainer_exit_code);
  }
  // The other witnesses: the signal (trainer, exit code or SLURM) and SLURM's own account.
  const std::string signal = AttemptSignal(a);
  if (!signal.empty()) out += " — signal " + PrintableText(signal);
  if (!a.slurm_state.empty()) {
    // An ended attempt's RUNNING is only what the sync pass last saw (slurm_state_kind.h).
    out += ClassifySlurmState(a) == SlurmStateKind::kLastSeen
               ? " — SLURM last seen " + PrintableText(a.slurm_state) + " (final state not known)"
               : " — SLURM " + PrintableText(a.slurm_state);
    if (!a.slurm_reason.empty() && a.slurm_reason != "None") {
      out += " (" + PrintableText(a.slurm_reason) + ")";
    }
    if (!a.slurm_exit_code.empty()) out += " ExitCode " + PrintableText(a.slurm_exit_code);
  }
  // A hang the launcher declared: which ranks, in which phase, how stale.
  if (a.hang_detected_at) {
    out += " — hang: stale rank(s) " + PrintableText(a.hang_stale_ranks.value_or("?"));
    if (a.hang_last_heartbeat_at) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", last heartbeat %.1f s before",
                    *a.hang_detected_at - *a.hang_last_heartbeat_at);
      out += buf;
    }
    if (a.hang_stack && !a.hang_stack->empty()) out += ", stacks captured";
  }
  // The requeue hold after it (hold_release.h): released by `baton watch`/`serve`, or refused.
  if (a.hold_released_at && a.ended_at) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " — requeue hold released after %.1f s",
                  *a.hold_released_at - *a.ended_at);
    out += buf;
  } else if (!a.hold_release_error.empty()) {
    out += " — SLURM refused to release the requeue hold: " + PrintableText(a.hold_release_error);
  }
  if (!a.trainer_message.empty()) return out + ": " + PrintableText(a.trainer_message);
  if (!a.trainer_end_reason.empty()) {
    if (a.trainer_end_reason != SegmentEndReasonName(SegmentEndReason::kCompleted))
      out += " (trainer: " + a.trainer_end_reason + ")";
    return out;
  }
  if (a.action != ExitActionName(ExitAction::kDone)) out += " (the trainer wrote no segment_end)";
  return out;
}

// The last lines of the attempt's log file (logs/<job_id>.out), indented; nothing when there is
// none. The same reader as the web UI's log viewer: nothing outside the run folder is opened.
void PrintLogTail(const std::string& run_dir, const AttemptRecord& a, size_t lines) {
  LogPageRequest req;
  req.limit = 8192;
  Result<json> page = ReadAttemptLogPage(run_dir, a, req);
  if (!page.ok() || !(*page)["exists"].get<bool>()) return;
  const std::string text = (*page)["text"].get<std::string>();
  std::vector<std::string> all;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    all.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  const size_t first = all.size() > lines ? all.size() - lines : 0;
  std::cout << "\nlast lines of " << (*page)["path"].get<std::string>() << " (attempt " << a.job_id
            << "." << a.restart_count << "):\n";
  for (size_t i = first; i < all.size(); ++i) std::cout << "  | " << PrintableText(all[i]) << "\n";
}

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

// The attempt list of `show` and `attempts`: each attempt numbered from 0 like the table.
json CliAttemptsJson(const std::vector<AttemptRecord>& attempts) {
  json list = json::array();
  for (size_t i = 0; i < attempts.size(); ++i) {
    json j = AttemptJson(attempts[i]);
    j["attempt"] = i;
    const char* kind = SlurmStateKindName(ClassifySlurmState(attempts[i]));
    j["slurm_state_kind"] = kind ? json(kind) : json(nullptr);
    list.push_back(std::move(j));
  }
  return list;
}

int RunLs(const QueryOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<std::vector<RunRecord>> runs = (*store)->ListRuns(o.limit);
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
    rows.push_back({std::to_string(r.id), r.name, RunStatusName(r.status),
                    std::to_string(last) + "/" + std::to_string(r.target_steps),
                    std::to_string(attempts->size()), r.job_id.empty() ? "-" : r.job_id,
                    FormatTime(r.created_at), r.reason});
  }
  PrintTable(std::cout, {"ID", "NAME", "STATUS", "STEP", "ATTEMPTS", "JOB", "CREATED", "REASON"},
             rows);
  return 0;
}

// The attempt table, then one line per attempt saying how it ended (messages are too long for
// a column).
void PrintAttemptTable(const std::vector<AttemptRecord>& attempts,
                       const ExpectedSchedule& schedule) {
  std::vector<std::vector<std::string>> rows;
  int i = 0;
  for (const AttemptRecord& a : attempts) {
    rows.push_back({std::to_string(i++), AttemptLabel(a), InJobColumn(a), StepRange(a),
                    a.resume_mode.empty() ? "-" : a.resume_mode, WarmupColumn(a, schedule),
                    a.end_reason.empty() ? (a.ended_at ? "-" : "(running)") : a.end_reason,
                    a.exit_code ? std::to_string(*a.exit_code) : "-", a.nodes,
                    FormatTime(a.started_at)});
  }
  PrintTable(std::cout,
             {"ATTEMPT", "JOB.RESTART", "IN-JOB", "STEPS", "RESUME", "WARMUP", "END", "EXIT",
              "NODES", "STARTED"},
             rows);
  if (attempts.empty()) return;
  std::cout << "\nhow each attempt ended:\n";
  for (size_t i = 0; i < attempts.size(); ++i) {
    const AttemptRecord& a = attempts[i];
    std::cout << "  " << i << " (" << AttemptLabel(a) << "): " << AttemptOutcome(a);
    if (!a.init_from.empty()) std::cout << "; weights from " << PrintableText(a.init_from);
    std::cout << "\n";
  }
}

// "ep_1, ep_2, ... (+N more)" for one skipped step.
std::string EpisodeList(const std::vector<std::string>& ids) {
  if (ids.empty()) return "(no episode ids)";
  std::string out;
  for (size_t i = 0; i < ids.size() && i < kShownEpisodeIds; ++i) {
    out += (i ? ", " : "") + PrintableText(ids[i]);
  }
  if (ids.size() > kShownEpisodeIds) {
    out += " (+" + std::to_string(ids.size() - kShownEpisodeIds) + " more)";
  }
  return out;
}

// "1h 2m", "3m 4s", "5.2 s": a span of seconds for the time lines.
std::string Span(double s) {
  char buf[48];
  if (!(s >= 0)) return "-";
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm %ds", int(s / 60), int(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh %dm", int(s / 3600), int(s / 60) % 60);
  }
  return buf;
}

std::string Percent(std::optional<double> v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * *v);
  return buf;
}

// Where the run's wall time went (run_time_buckets.h): ETTR, the buckets that are not zero, and
// the checkpoint interval that would lose the least time.
void PrintTimeBuckets(const RunTimeBuckets& t) {
  std::cout << "  time     wall " << Span(t.run.wall_s) << ", ETTR " << Percent(Ettr(t.run)) << " ("
            << Percent(EttrWithoutQueue(t.run)) << " without queue)\n           ";
  std::string parts;
  for (TimeBucket b : AllTimeBuckets()) {
    if (!(t.run[b] > 0.05)) continue;
    std::string name = TimeBucketName(b);
    std::replace(name.begin(), name.end(), '_', ' ');
    parts += (parts.empty() ? "" : " · ") + name + " " + Span(t.run[b]);
  }
  std::cout << (parts.empty() ? "(nothing yet)" : parts) << "\n";
  const CheckpointIntervalAdvice a = AdviseCheckpointInterval(t);
  std::cout << "  ckpt     interval that minimises lost time: ";
  if (!a.seconds) {
    std::cout << a.reason << "\n";
    return;
  }
  char save[32];
  std::snprintf(save, sizeof save, "%.2f s", a.mean_save_s);
  std::cout << (a.steps ? "every " + std::to_string(std::llround(*a.steps)) + " steps, " : "")
            << Span(*a.seconds) << " (Young/Daly: save " << save << ", " << a.interruptions
            << " interruption" << (a.interruptions == 1 ? "" : "s") << ", one per "
            << Span(*a.mean_time_between_interruptions_s) << ")\n";
}

// Index of an attempt id in `attempts` (the ATTEMPT column), -1 when unknown.
int64_t AttemptIndex(const std::vector<AttemptRecord>& attempts, int64_t attempt_id) {
  for (size_t i = 0; i < attempts.size(); ++i) {
    if (attempts[i].id == attempt_id) return static_cast<int64_t>(i);
  }
  return -1;
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
  if (o.json) {
    json j = CliRunJson(*run);
    j["time"] = TimeBucketsJson(*time, /*first_attempt=*/0);
    j["last_step"] = last;
    j["steps"] = *steps;
    j["superseded_steps"] = *all_steps - *steps;
    j["nonfinite_steps"] = nonfinite->effective;
    j["nonfinite_superseded"] = nonfinite->superseded;
    json skipped_list = json::array();
    for (const StepRecord& s : *skipped) {
      // The CLI has always listed fewer fields per skipped step than the web API.
      skipped_list.push_back(
          WithoutKeys(NonfiniteStepJson(s, AttemptIndex(*attempts, s.attempt_id)),
                      {"loss_video", "loss_action", "time"}));
    }
    j["nonfinite"] = skipped_list;
    j["attempts"] = CliAttemptsJson(*attempts);
    j["stop_save"] = StopSaveJson(*stop_save);
    std::cout << DumpJson(j, 2) << "\n";
    return 0;
  }
  std::cout << "run " << run->id << " (" << PrintableText(run->name)
            << "): " << RunStatusName(run->status)
            << (run->reason.empty() ? "" : " — " + PrintableText(run->reason)) << "\n"
            << "  step     " << last << " of " << run->target_steps << " (" << *steps
            << " step rows, " << (*all_steps - *steps) << " superseded)\n";
  if (nonfinite->effective > 0 || nonfinite->superseded > 0) {
    // Skipped steps: not applied (weights and optimizer state untouched), with the episodes of
    // the step so the data can be checked.
    std::cout << "  skipped  " << nonfinite->effective << " non-finite step"
              << (nonfinite->effective == 1 ? "" : "s") << " (not applied)";
    if (nonfinite->superseded > 0) {
      std::cout << ", " << nonfinite->superseded << " more in steps redone after a resume";
    }
    std::cout << "\n";
    for (const StepRecord& s : *skipped) {
      std::cout << "           step " << s.step + 1 << " (attempt "
                << AttemptIndex(*attempts, s.attempt_id)
                << "): " << EpisodeList(s.nonfinite_episodes) << "\n";
    }
    if (nonfinite->effective > static_cast<int64_t>(skipped->size())) {
      std::cout << "           ... " << nonfinite->effective - static_cast<int64_t>(skipped->size())
                << " more (--json lists up to " << kJsonNonfiniteSteps << ")\n";
    }
  }
  std::cout << "  job      " << (run->job_id.empty() ? "-" : run->job_id) << "\n"
            << "  run dir  " << run->run_dir << "\n"
            << "  config   " << run->config_source << "\n"
            << "  created  " << FormatTime(run->created_at) << "\n";
  const std::string stop_line = StopSaveLine(*stop_save);
  if (!stop_line.empty()) std::cout << "  stop save " << PrintableText(stop_line) << "\n";
  PrintTimeBuckets(*time);
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
