// baton-train: the trainer's entry point, a few kilobytes that start in microseconds.
//
// SLURM's warning and preemption signals can reach the trainer at any moment after it starts.
// The real program (baton-train-program, next to this file) links libtorch, whose relocations
// alone keep the dynamic loader busy for 30–300 ms before any of the program's code runs; a
// signal in that window would kill it with the default action, before it could checkpoint or
// say why. This gate blocks the stop signals first (from .preinit_array, before anything else
// runs) and then execs the real program: the signal mask and any pending signal survive exec,
// so a signal that arrives while libtorch loads waits until the trainer has its handler in place
// (trainer/train/stop_signal.h) and unblocks it. Commands other than `train` unblock at once.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void BlockStopSignals(int argc, char** argv, char** envp) {
  (void)argc;
  (void)argv;
  (void)envp;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL);
}

__attribute__((section(".preinit_array"),
               used)) static void (*const kBlockStopSignals)(int, char**,
                                                             char**) = &BlockStopSignals;

int main(int argc, char** argv) {
  (void)argc;
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
  if (n <= 0) {
    fprintf(stderr, "baton-train: cannot find its own location (/proc/self/exe): %s\n",
            strerror(errno));
    return 70;
  }
  path[n] = '\0';
  char* slash = strrchr(path, '/');
  strcpy(slash != NULL ? slash + 1 : path, "baton-train-program");
  execv(path, argv);
  fprintf(
      stderr,
      "baton-train: cannot run %s: %s\n  hint: baton-train-program must sit next to baton-train\n",
      path, strerror(errno));
  return 70;
}
