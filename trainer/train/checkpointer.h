// Checkpointer: when a training segment saves, and how (torchtitan's checkpointer.save(step,
// last_step=…)). The segment calls AfterStep once after each step it applied; the checkpointer
// decides between the final save, a stop's save, the periodic save (checkpoint.every) and the
// commit of checkpoint.async's background save at a step boundary, and owns that protocol: at
// most one background save in flight, committed once every rank's part is written, finished
// before any other save, or on a stop abandoned when it and the stop save after it would not fit
// the grace budget. Every save is collective (every rank writes its part of trainer/ckpt's
// checkpoint and leaves together, with one exit code when any part failed), refused on every rank
// when the run folder changed under the run, and reported when committed (its checkpoint record
// and line, rank 0). Test hooks inject faults at the save points.
//
// Borrows the segment (training_segment.h), which owns it; called from the segment's thread
// only; not thread-safe.
#pragma once

#include <cstdint>

#include "schema/event_records.h"
#include "trainer/ckpt/async_saver.h"
#include "trainer/ckpt/checkpoint.h"

namespace baton {

class TrainingSegment;

class Checkpointer {
 public:
  explicit Checkpointer(TrainingSegment& segment);

  // After step `steps_done` - 1 was applied, with the data position `micro_done` and the step's
  // `lr`. `stopping`: the segment leaves after this step for a requeue, so this is the stop's
  // save; otherwise the final save at run.steps, the periodic one, or a background save's commit
  // once it is written.
  void AfterStep(int64_t steps_done, int64_t micro_done, double lr, bool stopping);

  // A step abandoned on a stop signal: makes sure the state of its start (`step` steps done,
  // data position `micro`) is what the stop leaves on disk. True when it was there already: the
  // segment began there, or the periodic save of it committed (a background save of it still in
  // flight is finished here, as the stop's checkpoint). False: call SaveAbandoned.
  bool StepStartOnDisk(int64_t step);
  // The stop's save of the state of step `step`'s start (its LR: the previous step's).
  void SaveAbandoned(int64_t step, int64_t micro);

  // Waits for a background save in flight and commits it: the next thing (an eval, or a
  // verdict that ends the segment) needs it whole. `at_step`: the step boundary it is at.
  void Finish(int64_t at_step);

 private:
  void Save(int64_t steps_done, int64_t micro_done, double last_lr, SaveReason reason);
  SaveTeam Team() const;
  void Write(const TrainerState& st, SaveReason reason, const SaveTeam* team);
  void RefuseChangedFolder(int64_t steps_done);
  void Commit(int64_t at_step, bool wait);
  bool Settle(int64_t at_step, SaveReason reason, int64_t next_bytes);
  void Report(const SaveResult& r, int64_t steps_done, SaveReason reason,
              const std::string& how = "");

  TrainingSegment& seg_;
  AsyncSaver saver_;  // checkpoint.async: the periodic save being written in the background
};

}  // namespace baton
