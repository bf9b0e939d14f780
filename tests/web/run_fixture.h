// Realistic run history for the web tests and the web bench, made through the real path: a run
// row as `baton submit` creates it, event files in docs/events.md format written with the
// trainer's own EventWriter into <run_dir>/events/, then the orchestrator's IngestRun.
//
// The demo run ("preempted-demo") has three attempts of one SLURM job:
//   #1 job 1001.0  fresh         steps 0..349, checkpoints 100/200/300, preempted (no signal
//                               checkpoint: SLURM killed it after the grace time)
//   #2 job 1001.1  exact @ 300   steps 300..449, checkpoint 400, preempted
//   #3 job 1001.2  weights_only @ 400 (K = 20), steps 400..599, checkpoint 600, completed
// so steps 300..349 and 400..449 are re-done (100 superseded rows), 100 + 19 effective steps
// ran under warmup, and each requeue held the job 120 s. A sync pass saw each attempt RUNNING
// half-way, and none ran after the last one ended: #1 and #2 record SLURM's REQUEUED, #3 only the
// RUNNING last seen (SLURM's final state was never learnt).
//
// The non-finite run ("nonfinite-demo", NonfiniteRunSpec) has two attempts of one job:
//   #1 job 3003.0  fresh         steps 0..29, step 15 skipped (a finite loss with a NaN
//                               gradient norm), checkpoints 10/20, killed without a
//                               segment_end (exit 139, requeued as crashed)
//   #2 job 3003.1  exact @ 20    steps 20..44, steps 42..44 skipped (NaN losses), checkpoint 40,
//                               segment_end diverged (exit 79) with the trainer's message
// so 4 effective steps are non-finite ([15], [42, 44]) and episode ids and the message carry
// markup that must be shown as text. Test-only; single-threaded.
#pragma once

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/reconcile/reconciler.h"
#include "orchestrator/slurm/fake_slurm_client.h"
#include "orchestrator/store/store.h"
#include "schema/events.h"

namespace baton::webtest {

// A step the trainer skipped because its loss or gradient norm was NaN/Inf.
struct SkippedStep {
  std::vector<std::string> episodes;  // the step's episode ids (all ranks)
  bool loss_finite = false;           // only the gradient norm overflowed
};

struct AttemptSpec {
  std::string job_id;
  int64_t restart_count = 0;
  std::string mode;                  // fresh | exact | weights_only
  int64_t step0 = 0;                 // first step index computed
  int64_t end_step = 0;              // one past the last step index computed
  int64_t resume_warmup = 0;         // K (weights_only)
  std::vector<int64_t> checkpoints;  // checkpoint_step_N written during the attempt
  std::string action;  // attempt_end action: requeue | done | fail | '' (still running)
  std::string reason;  // attempt_end reason
  double start_time = 0;
  std::map<int64_t, SkippedStep> nonfinite;  // skipped steps
  // segment_end reason: '' = completed when done, signal otherwise; "-" = none (a crash).
  std::string trainer_reason;
  std::string trainer_message;  // segment_end message ('' = none)
  int exit_code = -1;           // segment_end and attempt_end exit code; -1 = 0 done, 75 otherwise
  // The job state a sync pass saw half-way through the attempt ('' = none ran meanwhile): the
  // fixture then ingests the events up to there and reconciles with that state, as `baton show`
  // or `baton serve` polling a live run does.
  std::string slurm_seen;
};

// An attempt from its ten leading fields; the others keep their defaults.
inline AttemptSpec Attempt(std::string job_id, int64_t restart_count, std::string mode,
                           int64_t step0, int64_t end_step, int64_t resume_warmup,
                           std::vector<int64_t> checkpoints, std::string action, std::string reason,
                           double start_time) {
  AttemptSpec a;
  a.job_id = std::move(job_id);
  a.restart_count = restart_count;
  a.mode = std::move(mode);
  a.step0 = step0;
  a.end_step = end_step;
  a.resume_warmup = resume_warmup;
  a.checkpoints = std::move(checkpoints);
  a.action = std::move(action);
  a.reason = std::move(reason);
  a.start_time = start_time;
  return a;
}

struct RunSpec {
  std::string name;
  int64_t target_steps = 600;
  double base_lr = 3e-5;
  int64_t warmup_steps = 100;
  int64_t resume_warmup_steps = 20;
  double step_time_s = 2.0;
  std::string partition = "gpu";
  int64_t micro_steps = 0;  // microstep events per step (train.profile), 0 = none
  double loss_scale = 1.0;  // multiplies the losses (runs that differ on the compare page)
  std::vector<AttemptSpec> attempts;
};

// Requeue hold between the demo's attempts, seconds.
inline constexpr double kDemoHoldS = 120.0;

inline RunSpec DemoRunSpec(const std::string& name = "preempted-demo", int64_t scale = 1) {
  RunSpec r;
  r.name = name;
  r.target_steps = 600 * scale;
  r.warmup_steps = 100;
  // Each attempt starts kDemoHoldS after the previous one's attempt_end (which comes 3 s after
  // its segment_start plus its steps: see WriteAttemptEvents).
  auto after = [&](const AttemptSpec& prev) {
    return prev.start_time + 3 + double(prev.end_step - prev.step0) * r.step_time_s + kDemoHoldS;
  };
  AttemptSpec a1 = Attempt("1001", 0, "fresh", 0, 350 * scale, 0,
                           {100 * scale, 200 * scale, 300 * scale}, "requeue", "preempted", 1.7e9);
  AttemptSpec a2 = Attempt("1001", 1, "exact", 300 * scale, 450 * scale, 0, {400 * scale},
                           "requeue", "preempted", after(a1));
  AttemptSpec a3 = Attempt("1001", 2, "weights_only", 400 * scale, 600 * scale, 20, {600 * scale},
                           "done", "completed", after(a2));
  for (AttemptSpec* a : {&a1, &a2, &a3}) a->slurm_seen = "RUNNING";
  r.attempts = {a1, a2, a3};
  return r;
}

// The trainer's schedule (trainer/optim/lr_schedule.h), restated for the fixture.
inline double FixtureLr(const RunSpec& r, const AttemptSpec& a, int64_t step) {
  double lr = r.base_lr;
  if (step < r.warmup_steps) lr *= double(step) / double(r.warmup_steps);
  if (a.mode == "weights_only" && a.resume_warmup > 0) {
    lr *= std::min(1.0, double(step - a.step0 + 1) / double(a.resume_warmup));
  }
  return lr;
}
inline bool FixtureInWarmup(const RunSpec& r, const AttemptSpec& a, int64_t step) {
  return step < r.warmup_steps ||
         (a.mode == "weights_only" && a.resume_warmup > 0 && step - a.step0 + 1 < a.resume_warmup);
}
inline int64_t FixtureWarmupUntil(const RunSpec& r, const AttemptSpec& a) {
  int64_t until = std::max(a.step0, r.warmup_steps);
  if (a.mode == "weights_only" && a.resume_warmup > 0) {
    until = std::max(until, a.step0 + a.resume_warmup - 1);
  }
  return until;
}

inline std::string FixtureConfig(const RunSpec& r) {
  // A frozen run.yaml names its dataset; the UI reads it back without looking for it.
  return "run:\n  name: " + r.name + "\n  steps: " + std::to_string(r.target_steps) +
         "\ndata:\n  path: /datasets/fixture\noptim:\n  lr: " + std::to_string(r.base_lr) +
         "\n  warmup_steps: " + std::to_string(r.warmup_steps) +
         "\n  resume_warmup_steps: " + std::to_string(r.resume_warmup_steps) + "\n";
}

// Writes one attempt's events file as the launcher and trainer would.
inline Status WriteAttemptEvents(const std::string& run_dir, const RunSpec& r,
                                 const AttemptSpec& a) {
  namespace fs = std::filesystem;
  const std::string path = RunFolder{run_dir}.EventsFile(a.job_id, a.restart_count);
  // A fresh file each time: EventWriter stamps its own clock, so write the raw lines ourselves
  // with the fixture's times through the same JSON shapes.
  fs::create_directories(run_dir + "/events");
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::Io("cannot write " + path);
  auto line = [&](const char* type, const char* source, double time, nlohmann::json rec) {
    rec["type"] = type;
    rec["time"] = time;
    rec["source"] = source;
    const std::string text = rec.dump() + "\n";
    std::fwrite(text.data(), 1, text.size(), f);
  };
  const std::string ckpt =
      a.step0 > 0 ? run_dir + "/checkpoints/checkpoint_step_" + std::to_string(a.step0) : "";
  double t = a.start_time;
  line("attempt_start", "launcher", t,
       {{"job_id", a.job_id},
        {"restart_count", a.restart_count},
        {"nodes", "node-a,node-b"},
        {"checkpoint", ckpt.empty() ? nlohmann::json(nullptr) : nlohmann::json(ckpt)},
        {"mode", a.mode},
        {"step0", a.step0},
        {"resume_warmup_steps", a.resume_warmup}});
  line("segment_start", "trainer", t + 1,
       {{"mode", a.mode},
        {"step0", a.step0},
        {"target_steps", r.target_steps},
        {"resume_warmup_steps", a.resume_warmup},
        {"warmup_until", FixtureWarmupUntil(r, a)},
        {"checkpoint", ckpt.empty() ? nlohmann::json(nullptr) : nlohmann::json(ckpt)},
        {"world_size", 2},
        {"config_hash", "abc123"},
        {"job_id", a.job_id},
        {"restart_count", a.restart_count}});
  t += 1;
  size_t next_ckpt = 0;
  int64_t consecutive = 0;
  for (int64_t s = a.step0; s < a.end_step; ++s) {
    t += r.step_time_s;
    // Deterministic, learnable-looking curves: loss decays, a bump after every resume.
    const double x = double(s) / double(std::max<int64_t>(1, r.target_steps));
    const double wiggle = 0.02 * std::sin(double(s) * 0.7);
    const double video = 1.2 * std::exp(-2.5 * x) + 0.3 + wiggle;
    const double action = 0.6 * std::exp(-3.0 * x) + 0.1 + 0.5 * wiggle;
    const int64_t tokens = 20000 + (s * 7919) % 4000;
    const int64_t padded = tokens * (2 + (s % 5)) / 100;
    nlohmann::json step{{"step", s},
                        {"lr", FixtureLr(r, a, s)},
                        {"loss", r.loss_scale * (video + action)},
                        {"loss_video", r.loss_scale * video},
                        {"loss_action", r.loss_scale * action},
                        {"grad_norm", 1.5 * std::exp(-1.5 * x) + 0.2 + std::fabs(wiggle)},
                        {"tokens", tokens},
                        {"padded_tokens", padded},
                        {"samples", 16},
                        {"valid_frames", 400},
                        {"padded_frames", 416},
                        {"step_time_s", r.step_time_s},
                        {"tokens_per_s", double(tokens) / r.step_time_s},
                        {"in_warmup", FixtureInWarmup(r, a, s)},
                        {"epoch", s / 1000}};
    auto skipped = a.nonfinite.find(s);
    consecutive = skipped == a.nonfinite.end() ? 0 : consecutive + 1;
    if (skipped != a.nonfinite.end()) {
      // As the trainer writes a skipped step: NaN/Inf come out of its JSON writer as null.
      const double nan = std::nan("");
      if (!skipped->second.loss_finite) {
        step["loss"] = nan;
        step["loss_video"] = nan;
        step["loss_action"] = nan;
      } else {
        step["loss"] = 1e6;  // finite, but not applied: not part of the curve
      }
      step["grad_norm"] = nan;
      step["nonfinite"] = true;
      step["nonfinite_episodes"] = skipped->second.episodes;
      step["consecutive_nonfinite"] = consecutive;
    }
    line("step", "trainer", t, step);
    for (int64_t m = 0; m < r.micro_steps; ++m) {
      // Packed rows of a few shapes: the token count cycles through 3 lengths.
      line("microstep", "trainer", t,
           {{"step", s},
            {"micro", m},
            {"tokens", tokens / r.micro_steps + 512 * ((s + m) % 3)},
            {"fwd_bwd_s", r.step_time_s / double(r.micro_steps) * (0.9 + 0.05 * double(m))},
            {"peak_bytes", int64_t(8) * 1024 * 1024 * 1024 + s % 7 * 1048576}});
    }
    if (next_ckpt < a.checkpoints.size() && a.checkpoints[next_ckpt] == s + 1) {
      line("checkpoint", "trainer", t + 0.5,
           {{"step", s + 1},
            {"path", run_dir + "/checkpoints/checkpoint_step_" + std::to_string(s + 1)},
            {"bytes", 123456789},
            {"seconds", 4.5},
            {"reason", s + 1 == r.target_steps ? "final" : "periodic"}});
      ++next_ckpt;
    }
  }
  if (!a.action.empty()) {
    const bool done = a.action == "done";
    const int code = a.exit_code >= 0 ? a.exit_code : (done ? 0 : 75);
    if (a.trainer_reason != "-") {
      const std::string reason =
          !a.trainer_reason.empty() ? a.trainer_reason : (done ? "completed" : "signal");
      nlohmann::json end{
          {"step", a.end_step},
          {"reason", reason},
          {"signal", reason == "signal" ? nlohmann::json("TERM") : nlohmann::json(nullptr)},
          {"exit_code", code}};
      if (!a.trainer_message.empty()) end["message"] = a.trainer_message;
      line("segment_end", "trainer", t + 1, end);
    }
    line("attempt_end", "launcher", t + 2,
         {{"job_id", a.job_id},
          {"restart_count", a.restart_count},
          {"exit_code", code},
          {"action", a.action},
          {"reason", a.reason}});
  }
  std::fclose(f);
  return Status::Ok();
}

// Creates the run row (as `baton submit` does), writes its events under `runs_root`/<id>-run
// and ingests them. Returns the run id.
inline Result<int64_t> CreateRunThroughIngest(Store& store, const std::string& runs_root,
                                              const RunSpec& r, const IngestOptions& options = {}) {
  int64_t id = 0;
  std::string run_dir;
  Status st = store.Write([&]() -> Status {
    NewRun n;
    n.name = r.name;
    n.config = FixtureConfig(r);
    n.config_source = "configs/example.yaml";
    static int pending = 0;  // a unique placeholder until the id names the folder
    n.run_dir = runs_root + "/pending-" + std::to_string(++pending);
    n.target_steps = r.target_steps;
    n.max_restarts = 100;
    n.max_failures = 3;
    n.partition = r.partition;
    const double created = r.attempts.empty() ? 1.7e9 : r.attempts.front().start_time - 30;
    Result<int64_t> rid = store.CreateRunInTx(n, created);
    if (!rid.ok()) return rid.status();
    id = *rid;
    run_dir = runs_root + "/" + std::to_string(id) + "-run";
    BATON_RETURN_IF_ERROR(store.SetRunDirInTx(id, run_dir, n.config));
    const std::string job = r.attempts.empty() ? "999" : r.attempts.front().job_id;
    return store.SetRunJobInTx(id, job, created);
  });
  if (!st.ok()) return st;
  Result<RunRecord> run = store.GetRun(id);
  if (!run.ok()) return run.status();
  for (const AttemptSpec& a : r.attempts) {
    if (!a.slurm_seen.empty()) {
      // The first half of the attempt's steps (its file is rewritten whole below, the same
      // lines first), ingested, then reconciled while SLURM says `slurm_seen`.
      AttemptSpec half = a;
      half.end_step = a.step0 + (a.end_step - a.step0) / 2;
      half.action.clear();
      BATON_RETURN_IF_ERROR(WriteAttemptEvents(run_dir, r, half));
      Result<IngestStats> ingested = IngestRun(store, *run, options);
      if (!ingested.ok()) return ingested.status();
      FakeSlurmClient slurm;
      slurm.SetState(a.job_id, a.slurm_seen);
      slurm.job(a.job_id)->restarts = a.restart_count;
      const double now = a.start_time + 1 + double(half.end_step - a.step0) * r.step_time_s;
      BATON_ASSIGN_OR_RETURN(RunRecord live, store.GetRun(id));
      BATON_RETURN_IF_ERROR(ReconcileRun(store, slurm, live, now));
    }
    BATON_RETURN_IF_ERROR(WriteAttemptEvents(run_dir, r, a));
  }
  Result<IngestStats> ingested = IngestRun(store, *run, options);
  if (!ingested.ok()) return ingested.status();
  return id;
}

// The job's stdout/stderr as sbatch writes it: <run_dir>/logs/<job_id>.out.
inline Status WriteJobLog(const std::string& run_dir, const std::string& job_id,
                          const std::string& text) {
  std::filesystem::create_directories(run_dir + "/logs");
  const std::string path = run_dir + "/logs/" + job_id + ".out";
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::Io("cannot write " + path);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return Status::Ok();
}

// Markup in an episode id (a file name may hold anything): the UI and the CLI show it as text.
inline constexpr const char* kMarkupEpisode = "ep_<img src=x onerror=alert(2)>";

// The trainer's message when nonfinite-demo diverges (shown verbatim, as text).
inline std::string DivergedMessage() {
  return std::string(
             "3 consecutive steps with a NaN/Inf loss or gradient norm "
             "(train.max_nonfinite_steps 3), last at step 45; episodes ep_000012, ") +
         kMarkupEpisode;
}

// The log of nonfinite-demo's job: launcher lines, a long training chatter and the trainer's
// last error line (with markup, shown as text).
inline std::string NonfiniteJobLog() {
  std::string out = "baton launch: job 3003 restart 0 on node-a,node-b\n";
  for (int i = 0; i < 3000; ++i) {
    out += "step " + std::to_string(i % 45) + " loss 0.93 lr 3e-05 tokens/s 10123 <b>ok</b>\n";
  }
  out += "baton launch: job 3003 restart 1 on node-a,node-b\n";
  out += "baton-train: error: " + DivergedMessage() + "\n";
  out += "baton launch: trainer exited 79 (diverged): failing the run\n";
  return out;
}

inline RunSpec NonfiniteRunSpec(const std::string& name = "nonfinite-demo") {
  RunSpec r;
  r.name = name;
  r.target_steps = 100;
  r.warmup_steps = 10;
  AttemptSpec a1 = Attempt("3003", 0, "fresh", 0, 30, 0, {10, 20}, "requeue", "crashed", 1.71e9);
  a1.nonfinite = {{15, {{"ep_000003", kMarkupEpisode}, /*loss_finite=*/true}}};
  a1.trainer_reason = "-";  // killed: no segment_end
  a1.exit_code = 139;
  const double start2 = a1.start_time + 3 + 30 * r.step_time_s + kDemoHoldS;
  AttemptSpec a2 = Attempt("3003", 1, "exact", 20, 45, 0, {40}, "fail", "diverged", start2);
  a2.nonfinite = {{42, {{"ep_000011", "ep_000012"}}},
                  {43, {{"ep_000011"}}},
                  {44, {{"ep_000012", kMarkupEpisode}}}};
  a2.trainer_reason = "diverged";
  a2.trainer_message = DivergedMessage();
  a2.exit_code = 79;
  r.attempts = {a1, a2};
  return r;
}

// A run still in its first attempt (RUNNING), named to test escaping.
inline RunSpec LiveRunSpec(const std::string& name, int64_t steps_done) {
  RunSpec r;
  r.name = name;
  r.target_steps = 1000;
  AttemptSpec a = Attempt("2002", 0, "fresh", 0, steps_done, 0, {}, "", "", 1.7e9 + 5000);
  r.attempts = {a};
  return r;
}

}  // namespace baton::webtest
