// The segment's checkpoint saves (train_loop.cc's section 6): the periodic, final and stop saves
// of trainer/ckpt/checkpoint.h made collective (every rank writes its part and leaves together,
// with one exit code when any part failed), checkpoint.async's background save committed at a
// step boundary or, on a stop that it and the stop save would not fit the grace for, abandoned;
// each committed save reported (its checkpoint record and line, rank 0). Test hooks inject faults
// at the save points. Called from the segment's thread; not thread-safe.
#pragma once

#include <cstdint>

#include "schema/event_records.h"
#include "trainer/ckpt/async_saver.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/distributed/shard_plan.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/resume_point.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/train_loop.h"

namespace baton {

// Commits the background save once every rank's part is written (a step boundary; collective
// on W > 1 while one is in flight). `wait`: wait for it (the next save needs the folder).
void CommitBackgroundSave(SegmentLog& log, const Setup& s, AsyncSaver& saver, int64_t at_step,
                          bool wait);

// Before any other save: the background one is committed (waited for), or on a stop abandoned
// when the rest of it and the stop save after it would not fit the grace budget. `next_bytes`:
// this rank's part of the save that follows it; 0 when none follows (the background save holds
// the stop's own state), and then it is always finished, its figures printed without a stop
// save's. False when it was abandoned (every rank decides alike).
bool SettleBackgroundSave(SegmentLog& log, const Setup& s, AsyncSaver& saver, int64_t at_step,
                          SaveReason reason, int64_t next_bytes);

// Rank 0 writes the checkpoint of the state after `steps_done` steps (with sharded optimizer
// state every rank writes its part); every rank waits for it, so no rank leaves (and gets its job
// step torn down) before the save is whole. A periodic save with checkpoint.async is only
// snapshotted here and written in the background (AsyncSaver); the final and the stop save are
// written here, after a background save in flight was committed or abandoned.
void Save(SegmentLog& log, const Setup& s, const TrainTestHooks& t, VideoActionModel& model,
          const AdamW& optimizer, const ShardPlan* shard_plan, const TrainerState& identity,
          const ResumePoint& rp, int64_t steps_done, int64_t micro_done, double last_lr,
          SaveReason reason, AsyncSaver& saver);

}  // namespace baton
