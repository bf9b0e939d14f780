// SegmentLog: the trainer's side of the events file (docs/events.md) for one segment — one run
// of `baton-train train` inside one SLURM job attempt.
//
// Rank 0 opens the file at segment start and writes every record. Any rank that dies with an
// error writes a `segment_end` record with reason "error", its exit code, rank and message, so
// the orchestrator can say why an attempt stopped even when the failing rank was not rank 0
// (ingest keeps the first error of an attempt: the root cause comes first, the peers' lost
// connections after). The path is known once the run folder is (the config may fail to parse
// before that: then the error is only on stderr). Not thread-safe; the train loop's thread only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "schema/events.h"

namespace baton {

class SegmentLog {
 public:
  // Where records go: <run_dir>/events/<job>.<restart>.jsonl unless `explicit_path` is set.
  void SetPath(const std::string& explicit_path, const std::string& run_dir, const std::string& job,
               int64_t restart);
  void SetRank(int64_t rank) { rank_ = rank; }
  // The optimizer step in progress (0-based index), reported with an error.
  void SetStep(int64_t step) { step_ = step; }
  bool leader() const { return rank_ == 0; }

  // Rank 0 only: opens the file (fails fast when it cannot) and writes records.
  void Open();
  template <class Record>
  void Write(const Record& record, bool sync = false) {
    if (leader()) Check(writer_.Write(record, sync));
  }

  // Any rank, best effort (never throws: it runs while an error propagates). `what` is the
  // FatalError text; its first part (before the "at file:line" line) becomes the message.
  void WriteError(int exit_code, const std::string& what);
  // The run folder was deleted or replaced: an error goes only into a file already open (the
  // old folder's), never into a new one, which would land in the wrong folder.
  void OnlyOpenFile() { only_open_file_ = true; }

 private:
  void Check(const Status& st);
  std::string path_;
  int64_t rank_ = 0;
  int64_t step_ = -1;
  EventWriter writer_;
  bool error_written_ = false;
  bool only_open_file_ = false;
};

// The user-facing part of a FatalError's text: everything before "\n  at file:line".
std::string ErrorMessage(const std::string& what);

}  // namespace baton
