#include "trainer/ckpt/async_saver.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "schema/exit_codes.h"
#include "schema/grace_seconds.h"
#include "schema/stop_signals.h"
#include "trainer/fail.h"
#include "trainer/memory/snapshot_fit.h"

namespace baton {

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A number >= 0 from the environment variable `name`'s `text`, or `fallback` when it is unset;
// anything else is a config error naming the variable.
double NonNegative(const char* name, const std::string& text, double fallback, const char* hint) {
  if (text.empty()) return fallback;
  const char* v = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !std::isfinite(x) || x < 0) {
    BATON_FAIL(kExitConfig, std::string(name) + "='" + text + "' is not a number >= 0", hint);
  }
  return x;
}

}  // namespace

AsyncSaver::AsyncSaver(const std::string& grace_s, const std::string& write_delay_ms) {
  if (!grace_s.empty()) {
    grace_s_ = BATON_VALUE_OR_FAIL(ParseGraceSeconds(grace_s),
                                   "the seconds a stop signal leaves before the job is killed "
                                   "(baton submit and baton resume write it into sbatch.sh)");
  }
  delay_ms_ = int64_t(
      NonNegative("BATON_TEST_CKPT_WRITE_DELAY_MS", write_delay_ms, 0, "tests only: unset it"));
}

AsyncSaver::~AsyncSaver() {
  cancel_ = true;
  Join();
}

void AsyncSaver::Join() {
  if (!thread_.joinable()) return;
  thread_.join();
  write_s_ = write_elapsed_.load();
  if (write_s_ > 0 && written_.load() > 0) rate_ = double(written_.load()) / write_s_;
}

const std::string& AsyncSaver::Refusal(const PreparedSave& p, int64_t mem_limit_bytes) {
  if (refusal_) return *refusal_;
  std::string mine = SnapshotRefusal(SnapshotBytes(p), ReadHostMemory(), mem_limit_bytes);
  // Every rank saves the same way, or their collectives would not pair up.
  if (p.multi && p.team.any_rank(!mine.empty()) && mine.empty())
    mine = "another rank's snapshot does not fit its host memory";
  refusal_ = mine;
  return *refusal_;
}

void AsyncSaver::Start(PreparedSave p) {
  const auto t0 = Clock::now();
  save_ = std::move(p);
  SnapshotSave(save_, &buffers_);
  snapshot_s_ = Since(t0);
  cancel_ = false;
  done_ = false;
  written_ = 0;
  write_elapsed_ = 0;
  payload_.clear();
  error_ = nullptr;
  overlapped_ = 0;
  in_flight_ = true;
  write_t0_ = Clock::now();
  thread_ = std::thread([this] {
    // Stop signals go to the training thread, which decides what a stop means for this save.
    sigset_t stop;
    sigemptyset(&stop);
    AddStopSignals(&stop);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    try {
      payload_ = WriteSaveFiles(save_, [this](uint64_t bytes) {
        written_ += int64_t(bytes);
        if (delay_ms_ > 0) ::usleep(useconds_t(delay_ms_ * 1000));
        write_elapsed_ = Since(write_t0_);
        return !cancel_.load();
      });
    } catch (...) {
      error_ = std::current_exception();
    }
    write_elapsed_ = Since(write_t0_);
    done_ = true;
  });
}

bool AsyncSaver::AllWritten() {
  if (!in_flight_) return false;
  ++overlapped_;
  const bool mine = done_.load();
  return save_.multi ? !save_.team.any_rank(!mine) : mine;
}

SaveResult AsyncSaver::Commit() {
  const auto t0 = Clock::now();
  Join();
  waited_s_ = Since(t0);
  in_flight_ = false;
  const auto t1 = Clock::now();
  SaveResult r = CommitSave(save_, [this]() -> std::string {
    if (error_) std::rethrow_exception(error_);
    return payload_;
  });
  commit_s_ = Since(t1);
  return r;
}

bool AsyncSaver::FinishFits(int64_t next_bytes, std::string* why) {
  bool fits = true;
  const int64_t written = written_.load();
  const double elapsed = write_elapsed_.load();
  const double rate =
      done_.load() || (written > 0 && elapsed > 0) ? double(written) / elapsed : rate_;
  char buf[320];
  if (grace_s_ < 0) {
    std::snprintf(buf, sizeof buf, "no grace budget (%s unset)", kGraceEnv);
  } else if (!(rate > 0)) {
    // Nothing written yet: abandoning loses little, and a stop save holds a newer state.
    fits = false;
    std::snprintf(buf, sizeof buf,
                  "nothing of it written yet, no rate to tell whether it fits the %g s grace "
                  "budget",
                  grace_s_);
  } else {
    // Whole hundredths of a second, rounded up, as printed: the figures shown are the ones
    // decided on, so "~1.00 s ... fit the 1 s" never hides a 1.004 s that did not.
    const auto centi = [](double s) { return std::ceil(s * 100 - 1e-6) / 100; };
    const double left = centi(done_.load() ? 0.0 : double(save_.bytes - written) / rate);
    const double next = centi(double(next_bytes) / rate);
    fits = left + next <= grace_s_ + 1e-9;
    if (next_bytes > 0) {
      std::snprintf(buf, sizeof buf,
                    "~%.2f s left of it + ~%.2f s for the stop save = ~%.2f s at %.1f MB/s %s "
                    "the %g s grace budget",
                    left, next, left + next, rate / 1e6, fits ? "fit" : "exceed", grace_s_);
    } else {
      std::snprintf(buf, sizeof buf,
                    "~%.2f s left of it, and no stop save after it, at %.1f MB/s %s the %g s "
                    "grace budget",
                    left, rate / 1e6, fits ? "fit" : "exceed", grace_s_);
    }
  }
  *why = buf;
  if (save_.multi) {
    const bool any_no = save_.team.any_rank(!fits);
    if (any_no && fits) *why = "another rank's write would exceed the grace budget";
    fits = !any_no;
  }
  return fits;
}

void AsyncSaver::Abandon() {
  cancel_ = true;
  Join();
  in_flight_ = false;
  // Every rank's writer has stopped before rank 0 removes the folder they wrote into.
  if (save_.multi) save_.team.any_rank(false);
  if (save_.leader) {
    std::error_code ec;
    std::filesystem::remove_all(save_.partial, ec);
  }
}

}  // namespace baton
