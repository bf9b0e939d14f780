#include "trainer/train/checkpointer.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "schema/event_records.h"
#include "trainer/ckpt/save_phases.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/distributed/process_group.h"
#include "trainer/fail.h"
#include "trainer/train/heartbeat.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/training_segment.h"

namespace baton {

namespace {

// Fault injection for tests: die by SIGKILL at a save point, or make the stop save slow.
SaveHooks FaultHooks(const TrainTestHooks& t, int64_t rank, int64_t step, SaveReason reason) {
  SaveHooks hooks;
  if (t.fault.empty() || (t.fault_at_step >= 0 && t.fault_at_step != step)) return hooks;
  if (rank != t.fault_rank) return hooks;
  auto die = [] { ::kill(::getpid(), SIGKILL); };
  if (t.fault == "mid_file") hooks.mid_file = die;
  if (t.fault == "before_manifest") hooks.before_manifest = die;
  if (t.fault == "before_rename") hooks.before_rename = die;
  if (t.fault == "write_error") {
    hooks.mid_file = [] {
      BATON_FAIL(kExitIo, "injected write failure (--fault write_error)",
                 "drop --fault write_error: it asks for this failure");
    };
  }
  if (t.fault == "slow_save" && reason == SaveReason::kSignal) {
    hooks.before_manifest = [] { ::usleep(3000 * 1000); };  // to land a second SIGTERM inside it
  }
  return hooks;
}

}  // namespace

Checkpointer::Checkpointer(TrainingSegment& segment)
    : seg_(segment),
      saver_(segment.setup().environment.grace_s, segment.setup().environment.ckpt_write_delay_ms) {
}

void Checkpointer::AfterStep(int64_t steps_done, int64_t micro_done, double lr, bool stopping) {
  const RunConfig& config = seg_.setup().config;
  if (stopping) {
    Save(steps_done, micro_done, lr, SaveReason::kSignal);
  } else if (steps_done == config.run.steps) {
    Save(steps_done, micro_done, lr, SaveReason::kFinal);
  } else if (steps_done % config.checkpoint.every == 0) {
    Save(steps_done, micro_done, lr, SaveReason::kPeriodic);
  } else {
    Commit(steps_done, /*wait=*/false);
  }
}

bool Checkpointer::StepStartOnDisk(int64_t step) {
  if (step == seg_.resume_point().step0()) return true;
  if (step % seg_.setup().config.checkpoint.every != 0) return false;
  // The periodic save of this state committed, or is still in the background: then it is
  // finished and is the stop's checkpoint (abandoned, the same state would be written again).
  return !(saver_.in_flight() && saver_.step() == step) ||
         Settle(step, SaveReason::kSignal, /*next_bytes=*/0);
}

void Checkpointer::SaveAbandoned(int64_t step, int64_t micro) {
  Save(step, micro, seg_.resume_point().schedule.At(step - 1), SaveReason::kSignal);
}

void Checkpointer::Finish(int64_t at_step) { Commit(at_step, /*wait=*/true); }

// The checkpoint event and line of a committed save (rank 0). `how` adds an async save's figures.
void Checkpointer::Report(const SaveResult& r, int64_t steps_done, SaveReason reason,
                          const std::string& how) {
  const Setup& s = seg_.setup();
  SegmentLog& log = seg_.log();
  HeartbeatTransferRate(r.bytes, r.seconds);  // every rank: the next save's hang budget
  if (!s.leader()) return;
  CheckpointEvent e;
  e.step = steps_done;
  e.path = r.path;
  e.bytes = r.bytes;
  e.seconds = r.seconds;
  e.reason = Name(reason);
  log.Write(e, /*sync=*/true);
  std::string per_rank;
  for (int64_t b : r.rank_bytes) per_rank += " " + std::to_string(b);
  std::printf("checkpoint %s: %.1f MB in %.2f s (%s)%s%s%s\n", r.path.c_str(), r.bytes / 1e6,
              r.seconds, Name(reason), how.c_str(),
              r.rank_bytes.size() > 1 ? ", bytes per rank:" : "",
              r.rank_bytes.size() > 1 ? per_rank.c_str() : "");
  std::fflush(stdout);
}

// Commits the background save once every rank's part is written (a step boundary; collective
// on W > 1 while one is in flight). `wait`: wait for it (the next save needs the folder).
void Checkpointer::Commit(int64_t at_step, bool wait) {
  AsyncSaver& saver = saver_;
  if (!saver.in_flight() || (!wait && !saver.AllWritten())) return;
  const int64_t step = saver.step();
  RunAgreed(*seg_.setup().group, "while committing a background checkpoint", [&]() -> std::string {
    const SaveResult r = saver.Commit();
    char how[320];
    std::snprintf(how, sizeof how,
                  ", async: training stalled %.3f s (snapshot %.3f s + commit %.3f s), waited "
                  "%.3f s for the write, written in the background in %.2f s over %lld step(s), "
                  "committed after step %lld",
                  saver.snapshot_seconds() + saver.commit_seconds(), saver.snapshot_seconds(),
                  saver.commit_seconds(), saver.waited_seconds(), saver.write_seconds(),
                  (long long)saver.steps_overlapped(), (long long)at_step);
    Report(r, step, SaveReason::kPeriodic, how);
    return "";
  });
}

// Before any other save: the background one is committed (waited for), or on a stop abandoned
// when the rest of it and the stop save after it would not fit the grace budget. `next_bytes`:
// this rank's part of the save that follows it; 0 when none follows (the background save holds
// the stop's own state), and then it is always finished, its figures printed without a stop
// save's. False when it was abandoned (every rank decides alike).
bool Checkpointer::Settle(int64_t at_step, SaveReason reason, int64_t next_bytes) {
  const Setup& s = seg_.setup();
  AsyncSaver& saver = saver_;
  if (!saver.in_flight()) return true;
  if (reason == SaveReason::kSignal) {
    std::string why;
    const bool fits = saver.FinishFits(next_bytes, &why);
    // Nothing after it: the save holds the very state the stop keeps. Abandoning it would only
    // write the same bytes again from the start, so it is finished whatever the figures say.
    const bool last = next_bytes == 0;
    if (!fits && !last) {
      const int64_t step = saver.step();
      saver.Abandon();
      if (s.leader()) {
        std::printf("abandoned the background save of step %lld on the stop request: %s\n",
                    (long long)step, why.c_str());
        std::fflush(stdout);
      }
      return false;
    }
    if (s.leader()) {
      if (last) {
        std::printf(
            "finishing the background save of step %lld, which holds the state the stop keeps "
            "(no stop save follows): %s%s\n",
            (long long)saver.step(), why.c_str(),
            fits ? "" : "; abandoning it would write the same state again from the start");
      } else {
        std::printf("finishing the background save of step %lld before the stop save: %s\n",
                    (long long)saver.step(), why.c_str());
      }
      std::fflush(stdout);
    }
    SetSaving(true);  // waiting for it is part of the stop save: a second SIGTERM exits at once
  }
  Commit(at_step, /*wait=*/true);
  return true;
}

// Never into a run folder that is gone or replaced (the save would recreate checkpoints/ where
// nobody looks): every rank stops with the same error.
void Checkpointer::RefuseChangedFolder(int64_t steps_done) {
  const Setup& s = seg_.setup();
  const std::string changed = seg_.folder().Changed();
  if (!s.group->AnyRank(!changed.empty())) return;
  seg_.log().OnlyOpenFile();
  BATON_FAIL(kExitData,
             (changed.empty() ? "another rank found that " + s.run_dir + " changed" : changed) +
                 "; stopping before the save of step " + std::to_string(steps_done),
             "the run's checkpoints and events lived there; restore the folder and resume, or "
             "start the run again");
}

// On W > 1 ranks every rank writes the files of the parameters it owns: optim.shard's plan, or
// the same element-balanced plan in a replicated run.
SaveTeam Checkpointer::Team() const {
  const Setup& s = seg_.setup();
  SaveTeam team;
  team.rank = s.env.rank;
  team.world = s.env.world_size;
  if (seg_.shard_plan() != nullptr) {
    team.owner = seg_.shard_plan()->owner;
  } else {
    std::vector<int64_t> numels;
    for (const auto& p : seg_.optimizer().state()) numels.push_back(p.param.numel());
    team.owner = MakeShardPlan(numels, s.env.world_size).owner;
  }
  ProcessGroupHandle* group = s.group.get();
  team.any_rank = [group](bool flag) { return group->AnyRank(flag); };
  team.agreed = [group](const std::string& phase, const std::function<std::string()>& part) {
    return RunAgreed(*group, phase, part);
  };
  return team;
}

// Rank 0 writes the checkpoint of the state after `steps_done` steps (with sharded optimizer
// state every rank writes its part); every rank waits for it, so no rank leaves (and gets its job
// step torn down) before the save is whole. A periodic save with checkpoint.async is only
// snapshotted here and written in the background (AsyncSaver); the final and the stop save are
// written here, after a background save in flight was committed or abandoned.
void Checkpointer::Save(int64_t steps_done, int64_t micro_done, double last_lr, SaveReason reason) {
  RefuseChangedFolder(steps_done);
  const Setup& s = seg_.setup();
  const SaveTeam team = s.env.world_size > 1 ? Team() : SaveTeam();
  // The save's own budget for the launcher's hang watch: weights and both AdamW moments.
  int64_t save_bytes = 0;
  for (const auto& p : seg_.optimizer().state())
    save_bytes += 3 * p.param.numel() * int64_t(p.split ? 4 : p.param.element_size());
  Beat(HeartbeatPhase::kSave, steps_done, 0, TransferBudgetS(save_bytes));
  SleepSeconds(s.environment.heartbeat.save_sleep_s);
  Settle(steps_done, reason, saver_.bytes());
  // Every rank leaves the save together, with one exit code when any rank's part failed.
  RunAgreed(*s.group, "while saving a checkpoint", [&]() -> std::string {
    const ResumePoint& rp = seg_.resume_point();
    TrainerState st = seg_.identity();
    st.step = steps_done;
    st.sampler = rp.plans->Cursor(micro_done);
    st.lr = rp.schedule;
    st.last_lr = last_lr;
    Write(st, reason, s.env.world_size > 1 ? &team : nullptr);
    return "";
  });
}

// This rank's part of the save of `st`: started in the background (a periodic save with
// checkpoint.async whose snapshot fits), or written and committed here.
void Checkpointer::Write(const TrainerState& st, SaveReason reason, const SaveTeam* team) {
  const Setup& s = seg_.setup();
  VideoActionModel& model = seg_.model();
  const SaveHooks hooks = FaultHooks(seg_.hooks(), s.env.rank, st.step, reason);
  if (reason == SaveReason::kPeriodic && s.config.checkpoint.async) {
    PreparedSave p =
        PrepareSave(s.checkpoints_dir(), model, seg_.optimizer(), st, s.config, hooks, team);
    const std::string& refusal =
        saver_.Refusal(p, int64_t(s.config.slurm.mem_per_task_gb * double(int64_t(1) << 30)));
    if (refusal.empty()) {
      saver_.Start(std::move(p));
      return;
    }
    if (saver_.FirstRefusal() && s.leader()) {
      std::printf("checkpoint.async: periodic saves are synchronous: %s\n", refusal.c_str());
    }
    SetSaving(true);
    const SaveResult r = CommitSave(p, [&] { return WriteSaveFiles(p); });
    SetSaving(false);
    Report(r, st.step, reason);
    return;
  }
  SetSaving(true);
  const SaveResult r =
      SaveCheckpoint(s.checkpoints_dir(), model, seg_.optimizer(), st, s.config, hooks, team);
  SetSaving(false);
  Report(r, st.step, reason);
}

}  // namespace baton
