#include "trainer/train/stop_signal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace baton {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_saving = 0;

constexpr int kStopSignals[] = {SIGUSR1, SIGUSR2, SIGTERM, SIGINT};

void OnSignal(int sig) {
  if ((sig == SIGTERM || sig == SIGINT) && g_saving && g_stop_signal != 0) {
    ::_exit(128 + sig);  // a second TERM/INT during the save: the user insists, leave now
  }
  g_stop_signal = sig;
}

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

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
  for (int sig : kStopSignals) sigaction(sig, &sa, nullptr);
  const sigset_t set = StopSet();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

int StopSignal() { return g_stop_signal; }

const char* StopSignalName(int sig) {
  switch (sig) {
    case SIGUSR1:
      return "USR1";
    case SIGUSR2:
      return "USR2";
    case SIGTERM:
      return "TERM";
    case SIGINT:
      return "INT";
    default:
      return sig == 0 ? "none" : "other";
  }
}

void SetSaving(bool saving) { g_saving = saving ? 1 : 0; }

void RaiseStopFlag(int sig) { g_stop_signal = sig; }

}  // namespace baton
