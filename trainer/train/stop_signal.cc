#include "trainer/train/stop_signal.h"
#include "trainer/train/stop_state.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace baton {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_saving = 0;
volatile std::sig_atomic_t g_stop_count = 0;
std::atomic<int> g_agreed{0};

// The trainer's mark, and the handler's copy of it. Lock-free atomics: safe in a handler, which
// may run on any thread that leaves the signals unblocked.
struct Mark {
  std::atomic<int> phase{int(StopPhase::kStartup)};
  std::atomic<int64_t> step{-1}, micro{-1}, block{-1};
};
Mark g_now, g_landed;
std::atomic<int> g_landed_signal{0};
std::atomic<double> g_landed_at{0};
static_assert(std::atomic<int64_t>::is_always_lock_free && std::atomic<double>::is_always_lock_free,
              "the signal handler reads these");

// ArmTestSignal's target; phase -1 = disarmed.
std::atomic<int> g_arm_phase{-1};
int64_t g_arm_step = -1, g_arm_micro = -1, g_arm_block = -1;

void Copy(const Mark& from, Mark& to) {
  to.phase.store(from.phase.load(std::memory_order_relaxed), std::memory_order_relaxed);
  to.step.store(from.step.load(std::memory_order_relaxed), std::memory_order_relaxed);
  to.micro.store(from.micro.load(std::memory_order_relaxed), std::memory_order_relaxed);
  to.block.store(from.block.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void OnSignal(int sig) {
  if ((sig == SIGTERM || sig == SIGINT) && g_saving && g_stop_signal != 0) {
    ::_exit(128 + sig);  // a second TERM/INT during the save: the user insists, leave now
  }
  if (g_stop_signal == 0) {
    Copy(g_now, g_landed);
    g_landed_at.store(MonotonicSeconds(), std::memory_order_relaxed);
    g_landed_signal.store(sig, std::memory_order_release);
  }
  g_stop_signal = sig;
  g_stop_count = g_stop_count + 1;
}

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  AddStopSignals(&set);
  return set;
}

bool Matches(int64_t want, int64_t have) { return want < 0 || want == have; }

}  // namespace

void BlockStopSignals() {
  const sigset_t set = StopSet();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
}

void UnblockStopSignals() {
  const sigset_t set = StopSet();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (const StopSignalEntry& e : kStopSignals) sigaction(e.number, &sa, nullptr);
  const sigset_t set = StopSet();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

int StopSignal() { return g_stop_signal; }

int StopSignalCount() { return int(g_stop_count); }

bool InStopSave() { return g_saving != 0; }

const char* StopSignalName(int sig) {
  const std::optional<Signal> word = StopSignalWord(sig);
  if (word) return Name(*word);
  return sig == 0 ? "none" : "other";
}

int AgreedStopSignal() {
  const int agreed = g_agreed.load();
  return agreed != 0 ? agreed : int(g_stop_signal);
}

void AdoptStopSignal(int sig) { g_agreed.store(sig); }

void SetSaving(bool saving) {
  SetStopPhase(saving ? StopPhase::kSave : StopPhase::kBetweenSteps,
               g_now.step.load(std::memory_order_relaxed));
  g_saving = saving ? 1 : 0;
}

void RaiseStopFlag(int sig) { OnSignal(sig); }

void SetStopPhase(StopPhase phase, int64_t step, int64_t micro, int64_t block) {
  // The phase last, so a handler between these stores reads a new phase with at worst the old
  // block (a record, never a decision).
  g_now.step.store(step, std::memory_order_relaxed);
  g_now.micro.store(micro, std::memory_order_relaxed);
  g_now.block.store(block, std::memory_order_relaxed);
  g_now.phase.store(int(phase), std::memory_order_relaxed);
  if (g_arm_phase.load(std::memory_order_relaxed) == int(phase) && Matches(g_arm_step, step) &&
      Matches(g_arm_micro, micro) && Matches(g_arm_block, block)) {
    g_arm_phase.store(-1);
    ::kill(::getpid(), SIGUSR1);
  }
}

StopLanding FirstStopLanding() {
  StopLanding l;
  l.signal = g_landed_signal.load(std::memory_order_acquire);
  if (l.signal == 0) return l;
  l.phase = StopPhase(g_landed.phase.load(std::memory_order_relaxed));
  l.step = g_landed.step.load(std::memory_order_relaxed);
  l.micro = g_landed.micro.load(std::memory_order_relaxed);
  l.block = g_landed.block.load(std::memory_order_relaxed);
  l.at_s = g_landed_at.load(std::memory_order_relaxed);
  return l;
}

double MonotonicSeconds() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

bool ArmTestSignal(const char* spec) {
  if (spec == nullptr || *spec == '\0') {
    g_arm_phase.store(-1);
    return true;
  }
  static const std::pair<const char*, StopPhase> kNames[] = {{"forward", StopPhase::kForward},
                                                             {"backward", StopPhase::kBackward},
                                                             {"micro", StopPhase::kMicroStart},
                                                             {"update", StopPhase::kUpdate},
                                                             {"save", StopPhase::kSave}};
  const std::string s(spec);
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  int phase = -1;
  for (const auto& [name, p] : kNames) {
    if (s.compare(0, colon, name) == 0) phase = int(p);
  }
  if (phase < 0) return false;
  int64_t v[3] = {-1, -1, -1};
  const char* p = s.c_str() + colon + 1;
  for (int i = 0; i < 3 && *p != '\0'; ++i) {
    char* end = nullptr;
    v[i] = std::strtoll(p, &end, 10);
    if (end == p || (*end != '\0' && *end != ':')) return false;
    p = *end == ':' ? end + 1 : end;
  }
  if (*p != '\0' || v[0] < 0) return false;
  g_arm_step = v[0];
  g_arm_micro = v[1];
  g_arm_block = v[2];
  g_arm_phase.store(phase);
  return true;
}

}  // namespace baton
