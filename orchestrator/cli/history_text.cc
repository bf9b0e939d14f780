#include "orchestrator/cli/history_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/history/attempt_log.h"
#include "orchestrator/history/duration_text.h"
#include "orchestrator/history/run_timeline.h"
#include "orchestrator/reconcile/slurm_state_kind.h"
#include "orchestrator/store/attempt_evidence.h"
#include "schema/event_records.h"
#include "schema/events.h"
#include "schema/step_numbers.h"

using nlohmann::json;

namespace baton {

namespace {

// Episode ids shown per skipped step in text.
inline constexpr size_t kShownEpisodeIds = 8;

// Steps and ranges show as step numbers (schema/step_numbers.h): indices s0..n-1 are s0+1..n.
std::string StepRange(const AttemptRecord& a) {
  const int64_t s0 = a.step0.value_or(0);
  const StepNumberRange r = StepNumbersOf(s0, a.last_step.value_or(s0));
  if (r.empty()) return "(none) @" + std::to_string(s0);
  return std::to_string(r.first) + ".." + std::to_string(r.last);
}

std::string WarmupColumn(const AttemptRecord& a, const ExpectedSchedule& schedule) {
  const WarmupRange w = AttemptWarmup(
      a, schedule, a.last_step ? std::optional<int64_t>(*a.last_step - 1) : std::nullopt);
  const StepNumberRange r = StepNumbersOf(w.from, w.until);
  if (r.empty()) return "-";
  return std::to_string(r.first) + ".." + std::to_string(r.last);
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
  std::string word = a.action == Name(ExitAction::kDone)      ? "done"
                     : a.action == Name(ExitAction::kRequeue) ? "requeued"
                     : a.action == Name(ExitAction::kFail)    ? "failed"
                     : a.action == Name(ExitAction::kRestart) ? "restarted in the job"
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
    if (a.trainer_end_reason != Name(SegmentEndReason::kCompleted))
      out += " (trainer: " + a.trainer_end_reason + ")";
    return out;
  }
  if (a.action != Name(ExitAction::kDone)) out += " (the trainer wrote no segment_end)";
  return out;
}

std::string Percent(std::optional<double> v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * *v);
  return buf;
}

}  // namespace

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

void PrintAttemptTable(const std::vector<AttemptRecord>& attempts,
                       const ExpectedSchedule& schedule) {
  std::vector<std::vector<std::string>> rows;
  int64_t i = 0;
  for (const AttemptRecord& a : attempts) {
    rows.push_back(
        {std::to_string(AttemptNumber(i++)), AttemptLabel(a), InJobColumn(a), StepRange(a),
         a.resume_mode.empty() ? "-" : a.resume_mode, WarmupColumn(a, schedule),
         a.end_reason.empty() ? (a.ended_at ? "-" : "(running)") : a.end_reason,
         a.exit_code ? std::to_string(*a.exit_code) : "-", a.nodes, FormatTime(a.started_at)});
  }
  PrintTable(std::cout,
             {"ATTEMPT", "JOB.RESTART", "IN-JOB", "STEPS", "RESUME", "WARMUP", "END", "EXIT",
              "NODES", "STARTED"},
             rows);
  if (attempts.empty()) return;
  std::cout << "\nhow each attempt ended:\n";
  for (size_t i = 0; i < attempts.size(); ++i) {
    const AttemptRecord& a = attempts[i];
    std::cout << "  " << AttemptNumber(static_cast<int64_t>(i)) << " (" << AttemptLabel(a)
              << "): " << AttemptOutcome(a);
    if (!a.init_from.empty()) std::cout << "; weights from " << PrintableText(a.init_from);
    std::cout << "\n";
  }
}

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

void PrintTimeBuckets(const RunTimeBuckets& t) {
  std::cout << "  time     wall " << DurationText(t.run.wall_s) << ", ETTR " << Percent(Ettr(t.run))
            << " (" << Percent(EttrWithoutQueue(t.run)) << " without queue)\n           ";
  std::string parts;
  for (TimeBucket b : AllTimeBuckets()) {
    if (!(t.run[b] > 0.05)) continue;
    std::string name = Name(b);
    std::replace(name.begin(), name.end(), '_', ' ');
    parts += (parts.empty() ? "" : " · ") + name + " " + DurationText(t.run[b]);
  }
  std::cout << (parts.empty() ? "(nothing yet)" : parts) << "\n";
  const CheckpointIntervalAdvice a = AdviseCheckpointInterval(t);
  std::cout << "  ckpt     interval that minimises lost time: ";
  if (!a.seconds) {
    std::cout << a.reason << "\n";
    return;
  }
  char save[32];
  if (std::fabs(a.mean_save_s) < 1e6) {
    std::snprintf(save, sizeof save, "%.2f s", a.mean_save_s);
  } else {
    std::snprintf(save, sizeof save, "%.3g s", a.mean_save_s);  // never a 300-digit figure
  }
  std::cout << (a.steps ? "every " + CountText(*a.steps) + " steps, " : "")
            << DurationText(*a.seconds) << " (Young/Daly: save " << save << ", " << a.interruptions
            << " interruption" << (a.interruptions == 1 ? "" : "s") << ", one per "
            << DurationText(*a.mean_time_between_interruptions_s) << ")\n";
}

int64_t AttemptNumberOf(const std::vector<AttemptRecord>& attempts, int64_t attempt_id) {
  for (size_t i = 0; i < attempts.size(); ++i) {
    if (attempts[i].id == attempt_id) return AttemptNumber(static_cast<int64_t>(i));
  }
  return 0;
}

}  // namespace baton
