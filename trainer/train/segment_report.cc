#include "trainer/train/segment_report.h"

#include <cmath>
#include <cstdio>

#include "schema/exit_codes.h"
#include "schema/padding_waste.h"
#include "trainer/train/device_memory.h"
#include "trainer/train/stop_signal.h"

namespace baton {

namespace {

using Clock = std::chrono::steady_clock;

std::string FormatDuration(double s) {
  char buf[32];
  const int64_t t = int64_t(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)t / 3600, (long long)(t % 3600) / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)t / 60, (long long)t % 60);
  return buf;
}

}  // namespace

std::string JoinIds(const std::vector<std::string>& ids, size_t max) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < max; ++i) s += (i ? ", " : "") + ids[i];
  if (ids.size() > max) s += ", ... (" + std::to_string(ids.size()) + " in all)";
  return s;
}

void ReportSegmentStart(SegmentLog& log, const Setup& s, const ResumePoint& rp,
                        const TrainerState& identity) {
  if (!s.leader()) return;
  log.Open();
  for (const auto& why : rp.decision.skipped)
    std::fprintf(stderr, "resume: skipping %s\n", why.c_str());
  SegmentStartEvent e;
  e.mode = Name(rp.decision.mode);
  e.step0 = rp.step0();
  e.target_steps = s.config.run.steps;
  e.resume_warmup_steps = rp.decision.resume_warmup_steps;
  e.warmup_until = rp.schedule.WarmupUntil();
  if (!rp.decision.checkpoint.empty()) e.checkpoint = rp.decision.checkpoint;
  e.init_from = rp.init_from;
  e.skipped = rp.decision.skipped;
  e.world_size = s.env.world_size;
  e.load_seconds = rp.load_seconds;
  e.config_hash = identity.config_hash;
  e.job_id = s.environment.JobOrLocal();
  e.restart_count = s.environment.restart_count;
  log.Write(e, /*sync=*/true);
  // Step numbers in messages are 1-based like the progress line (events keep 0-based indices).
  std::printf(
      "segment start: mode %s, step0 %lld, target %lld, resume warmup %lld (full LR from step "
      "%lld), "
      "%lld rank(s) on %s, checkpoint %s%s%s\n",
      Name(rp.decision.mode), (long long)rp.step0(), (long long)s.config.run.steps,
      (long long)rp.decision.resume_warmup_steps, (long long)rp.schedule.WarmupUntil() + 1,
      (long long)s.env.world_size, DeviceDescription(s.device).c_str(),
      rp.decision.checkpoint.empty() ? "none" : rp.decision.checkpoint.c_str(),
      rp.init_from.empty() ? "" : ", weights from ", rp.init_from.c_str());
  std::fflush(stdout);
}

void EndSegment(SegmentLog& log, int64_t step, SegmentEndReason reason, int code,
                const std::string& message) {
  SegmentEndEvent e;
  e.step = step;
  e.reason = Name(reason);
  e.exit_code = code;
  if (reason == SegmentEndReason::kSignal) e.signal = StopSignalWord(AgreedStopSignal());
  e.message = message;
  log.Write(e, /*sync=*/true);
}

std::vector<std::string> StepEpisodeIds(DataPlan& plans, const DatasetIndex& index, int64_t micro,
                                        int64_t accum, int64_t world) {
  std::vector<std::string> ids;
  for (int64_t j = 0; j < accum; ++j) {
    for (int64_t r = 0; r < world; ++r) {
      for (int64_t i : plans.Batch(r, micro + j)) ids.push_back(index.episodes[size_t(i)].id);
    }
  }
  return ids;
}

void StepReporter::Report(int64_t step, const StepStats& st, double lr, int64_t epoch,
                          int64_t nonfinite_run, const std::vector<std::string>& bad_ids) {
  if (!s.leader()) {
    profiled += int64_t(st.micro.size());
    return;
  }
  const int64_t steps = s.config.run.steps;
  const double tok_s = st.seconds > 0 ? double(st.tokens) / st.seconds : 0.0;
  const double waste = PaddingWaste(double(st.tokens), double(st.padded_tokens));
  const double pad = std::isnan(waste) ? 0.0 : waste;
  StepEvent e;
  e.step = step;
  e.lr = lr;
  e.loss = st.loss;
  e.loss_video = st.loss_video;
  e.loss_action = st.loss_action;
  e.grad_norm = st.grad_norm;
  e.tokens = st.tokens;
  e.padded_tokens = st.padded_tokens;
  e.samples = st.samples;
  e.valid_frames = st.valid_frames;
  e.padded_frames = st.padded_frames;
  e.step_time_s = st.seconds;
  e.tokens_per_s = tok_s;
  e.in_warmup = rp.schedule.InWarmup(step);
  e.epoch = epoch;
  e.nonfinite = st.nonfinite;
  e.nonfinite_episodes = bad_ids;
  e.consecutive_nonfinite = nonfinite_run;
  log.Write(e);
  for (const auto& p : st.micro) {
    log.Write(MicrostepEvent{step, profiled, p.tokens, p.fwd_bwd_s, p.peak_bytes});
    std::printf("profile micro %lld: %lld tokens, fwd+bwd %.3f s, peak %.1f MB\n",
                (long long)profiled, (long long)p.tokens, p.fwd_bwd_s, p.peak_bytes / 1e6);
    ++profiled;
  }
  if (st.nonfinite) {
    std::printf(
        "step %lld/%lld | NON-FINITE loss %g / grad norm %g: not applied (%lld in a row) | "
        "episodes %s\n",
        (long long)(step + 1), (long long)steps, st.loss, st.grad_norm, (long long)nonfinite_run,
        JoinIds(bad_ids, 8).c_str());
  } else if ((step + 1) % s.config.train.log_every == 0 || step + 1 == steps || st.stop) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    const double eta = elapsed / double(step + 1 - rp.step0()) * double(steps - step - 1);
    std::printf(
        "step %lld/%lld | loss %.4f (video %.4f, action %.4f) | lr %.3e | grad %.3f | %.0f tok/s "
        "| "
        "pad %.1f%% | ETA %s\n",
        (long long)(step + 1), (long long)steps, st.loss, st.loss_video, st.loss_action, lr,
        st.grad_norm, tok_s, 100 * pad, FormatDuration(eta).c_str());
  }
  std::fflush(stdout);
}

void ReportAbandoned(const Setup& s, const StepAbandoned& a) {
  const long long n = (long long)a.step + 1, r = (long long)s.env.rank;
  if (a.latency_s >= 0) {
    std::printf(
        "abandoned step %lld (rank %lld): %s landed in %s; left %s, %.4f s after the signal; "
        "one block fwd+bwd %.4f s (median of this step's; longest in the latest step %.4f s)\n",
        n, r, StopSignalName(StopSignal()), a.landed.c_str(), a.left.c_str(), a.latency_s,
        a.block_median_s, a.block_s);
  } else {
    std::printf("abandoned step %lld (rank %lld): on the stop request (%s) of rank %d\n", n, r,
                StopSignalName(a.signal), a.signal_rank);
  }
  std::fflush(stdout);
}

}  // namespace baton
