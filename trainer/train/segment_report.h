// What a training segment reports (rank 0): the segment_start record and line, the step record,
// the micro-step profile and the progress line of every step, the segment_end record, and the
// lines of a step abandoned on a stop signal. The records are schema/event_records.h's, written
// through the SegmentLog; the lines go to stdout. Called from the segment's thread; not
// thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "schema/event_records.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/data/data_plan.h"
#include "trainer/train/resume_point.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/step_abandon.h"
#include "trainer/train/train_step.h"

namespace baton {

// "a, b, c", at most `max` of them, then "... (N in all)".
std::string JoinIds(const std::vector<std::string>& ids, size_t max);

// The segment_start record and line (rank 0; the first write opens the events file).
void ReportSegmentStart(SegmentLog& log, const Setup& s, const ResumePoint& rp,
                        const TrainerState& identity);

// The segment_end record (rank 0 writes it, except on an error), naming the agreed stop signal.
void EndSegment(SegmentLog& log, int64_t step, SegmentEndReason reason, int code,
                const std::string& message = "");

// The episode ids of the optimizer step starting at micro index `micro`, on every rank.
std::vector<std::string> StepEpisodeIds(DataPlan& plans, const DatasetIndex& index, int64_t micro,
                                        int64_t accum, int64_t world);

// The step event, the micro-step profile and the progress line (rank 0).
struct StepReporter {
  SegmentLog& log;
  const Setup& s;
  const ResumePoint& rp;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  int64_t profiled = 0;

  void Report(int64_t step, const StepStats& st, double lr, int64_t epoch, int64_t nonfinite_run,
              const std::vector<std::string>& bad_ids);
};

// The line of a step abandoned on a stop signal (step_abandon.h): every rank says where its
// signal landed and when it left, or whose stop request it followed.
void ReportAbandoned(const Setup& s, const StepAbandoned& a);

}  // namespace baton
