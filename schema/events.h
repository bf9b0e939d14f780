// Event records: the append-only JSON-lines files through which the trainer and the launcher
// tell the orchestrator what happened (format: docs/events.md).
//
//   <run_dir>/events/<job_id>.<restart_count>.jsonl
//
// One JSON object per line, written with a single O_APPEND write() so lines never interleave
// and a crash leaves at most one torn last line (which ingestion leaves for its next pass).
// Trainers never open the database; the orchestrator ingests these files idempotently.
// EventWriter is not thread-safe (one per process; the trainer writes from rank 0 only).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "schema/event_records.h"
#include "schema/status.h"

namespace baton {

// The "type" values (the records: schema/event_records.h). Every record also has "time" (Unix
// seconds, float) and "source" ("trainer" | "launcher").
namespace event_type {
inline constexpr const char* kSegmentStart = SegmentStartEvent::kType;
inline constexpr const char* kStep = StepEvent::kType;
inline constexpr const char* kMicrostep = MicrostepEvent::kType;
inline constexpr const char* kCheckpoint = CheckpointEvent::kType;
inline constexpr const char* kSegmentEnd = SegmentEndEvent::kType;
inline constexpr const char* kAttemptStart = AttemptStartEvent::kType;
inline constexpr const char* kAttemptEnd = AttemptEndEvent::kType;
}  // namespace event_type

class EventWriter {
 public:
  EventWriter() = default;
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Opens (creating folders) `path` for appending. `source` is stamped on every record.
  Status Open(const std::string& path, const std::string& source);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

  // Adds "type", "time" and "source", then writes the record as one line. `sync` fsyncs after
  // the write (used for segment boundaries and checkpoints; steps are not fsynced).
  Status Write(const char* type, nlohmann::json record, bool sync = false);
  // One of the records of schema/event_records.h.
  template <class Record>
  Status Write(const Record& record, bool sync = false) {
    return Write(Record::kType, record.ToJson(), sync);
  }

 private:
  int fd_ = -1;
  std::string path_;
  std::string source_;
};

}  // namespace baton
