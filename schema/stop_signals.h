// The stop signals: the POSIX signals a baton job is told to stop with (SLURM's --signal lead
// before preemption or the time limit, the end sequence's SIGTERM, a user's Ctrl-C), each with
// the protocol word the events and logs carry (Vocabulary<Signal>, schema/vocabularies.h). The
// one table of them: the trainer's handler and its saver thread's mask, the launcher's
// forwarding and its log lines all read it. Constants only; thread-safe.
#pragma once

#include <csignal>
#include <optional>

#include "schema/vocabularies.h"

namespace baton {

struct StopSignalEntry {
  int number;              // SIGUSR1 ...
  Signal word;             // USR1 ... in events
  const char* posix_name;  // "SIGUSR1" ... in log lines
};

inline constexpr StopSignalEntry kStopSignals[] = {{SIGUSR1, Signal::kUsr1, "SIGUSR1"},
                                                   {SIGUSR2, Signal::kUsr2, "SIGUSR2"},
                                                   {SIGTERM, Signal::kTerm, "SIGTERM"},
                                                   {SIGINT, Signal::kInt, "SIGINT"}};

// The entry of POSIX signal `number`; nullptr when it is not a stop signal.
constexpr const StopSignalEntry* FindStopSignal(int number) {
  for (const StopSignalEntry& e : kStopSignals) {
    if (e.number == number) return &e;
  }
  return nullptr;
}

// The protocol word of a stop signal; nullopt for any other signal.
inline std::optional<Signal> StopSignalWord(int number) {
  const StopSignalEntry* e = FindStopSignal(number);
  return e ? std::optional<Signal>(e->word) : std::nullopt;
}

// Adds every stop signal to `set` (a thread that must leave them to another blocks them).
inline void AddStopSignals(sigset_t* set) {
  for (const StopSignalEntry& e : kStopSignals) sigaddset(set, e.number);
}

}  // namespace baton
