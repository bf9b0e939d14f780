#include "trainer/train/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>

namespace baton {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_saving = 0;

void OnSignal(int sig) {
  if (sig == SIGTERM && g_saving && g_stop_signal != 0) {
    ::_exit(128 + SIGTERM);  // second SIGTERM during the save: leave now
  }
  g_stop_signal = sig;
}

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGUSR1, SIGUSR2, SIGTERM}) sigaction(sig, &sa, nullptr);
}

int StopSignal() { return g_stop_signal; }

const char* StopSignalName(int sig) {
  switch (sig) {
    case SIGUSR1: return "USR1";
    case SIGUSR2: return "USR2";
    case SIGTERM: return "TERM";
    default: return sig == 0 ? "none" : "other";
  }
}

void SetSaving(bool saving) { g_saving = saving ? 1 : 0; }

void RaiseStopFlag(int sig) { g_stop_signal = sig; }

}  // namespace baton
