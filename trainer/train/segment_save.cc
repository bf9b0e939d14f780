#include "trainer/train/segment_save.h"

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

// The checkpoint event and line of a committed save (rank 0). `how` adds an async save's figures.
void ReportSave(SegmentLog& log, const Setup& s, const SaveResult& r, int64_t steps_done,
                SaveReason reason, const std::string& how = "") {
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

}  // namespace

void CommitBackgroundSave(SegmentLog& log, const Setup& s, AsyncSaver& saver, int64_t at_step,
                          bool wait) {
  if (!saver.in_flight() || (!wait && !saver.AllWritten())) return;
  const int64_t step = saver.step();
  RunAgreed(*s.group, "while committing a background checkpoint", [&]() -> std::string {
    const SaveResult r = saver.Commit();
    char how[320];
    std::snprintf(how, sizeof how,
                  ", async: training stalled %.3f s (snapshot %.3f s + commit %.3f s), waited "
                  "%.3f s for the write, written in the background in %.2f s over %lld step(s), "
                  "committed after step %lld",
                  saver.snapshot_seconds() + saver.commit_seconds(), saver.snapshot_seconds(),
                  saver.commit_seconds(), saver.waited_seconds(), saver.write_seconds(),
                  (long long)saver.steps_overlapped(), (long long)at_step);
    ReportSave(log, s, r, step, SaveReason::kPeriodic, how);
    return "";
  });
}

bool SettleBackgroundSave(SegmentLog& log, const Setup& s, AsyncSaver& saver, int64_t at_step,
                          SaveReason reason, int64_t next_bytes) {
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
  CommitBackgroundSave(log, s, saver, at_step, /*wait=*/true);
  return true;
}

void Save(SegmentLog& log, const Setup& s, const TrainTestHooks& t, VideoActionModel& model,
          const AdamW& optimizer, const ShardPlan* shard_plan, const TrainerState& identity,
          const ResumePoint& rp, int64_t steps_done, int64_t micro_done, double last_lr,
          SaveReason reason, AsyncSaver& saver) {
  // On W > 1 ranks every rank writes the files of the parameters it owns: optim.shard's plan, or
  // the same element-balanced plan in a replicated run.
  SaveTeam team;
  if (s.env.world_size > 1) {
    team.rank = s.env.rank;
    team.world = s.env.world_size;
    if (shard_plan != nullptr) {
      team.owner = shard_plan->owner;
    } else {
      std::vector<int64_t> numels;
      for (const auto& p : optimizer.state()) numels.push_back(p.param.numel());
      team.owner = MakeShardPlan(numels, s.env.world_size).owner;
    }
    ProcessGroupHandle* group = s.group.get();
    team.any_rank = [group](bool flag) { return group->AnyRank(flag); };
    team.agreed = [group](const std::string& phase, const std::function<std::string()>& part) {
      return RunAgreed(*group, phase, part);
    };
  }
  // The save's own budget for the launcher's hang watch: weights and both AdamW moments.
  int64_t save_bytes = 0;
  for (const auto& p : optimizer.state())
    save_bytes += 3 * p.param.numel() * int64_t(p.split ? 4 : p.param.element_size());
  Beat(HeartbeatPhase::kSave, steps_done, 0, TransferBudgetS(save_bytes));
  SleepSeconds(TestHooksFromEnv().save_sleep_s);
  const bool periodic = reason == SaveReason::kPeriodic;
  SettleBackgroundSave(log, s, saver, steps_done, reason, saver.bytes());
  // Every rank leaves the save together, with one exit code when any rank's part failed.
  RunAgreed(*s.group, "while saving a checkpoint", [&]() -> std::string {
    {
      TrainerState st = identity;
      st.step = steps_done;
      st.sampler = rp.plans->Cursor(micro_done);
      st.lr = rp.schedule;
      st.last_lr = last_lr;
      const SaveHooks hooks = FaultHooks(t, s.env.rank, steps_done, reason);
      const SaveTeam* tp = s.env.world_size > 1 ? &team : nullptr;
      if (periodic && s.config.checkpoint.async) {
        PreparedSave p =
            PrepareSave(s.checkpoints_dir(), model, optimizer, st, s.config, hooks, tp);
        const std::string& refusal =
            saver.Refusal(p, int64_t(s.config.slurm.mem_per_task_gb * double(int64_t(1) << 30)));
        if (refusal.empty()) {
          saver.Start(std::move(p));
          return "";
        }
        if (saver.FirstRefusal() && s.leader()) {
          std::printf("checkpoint.async: periodic saves are synchronous: %s\n", refusal.c_str());
        }
        SetSaving(true);
        const SaveResult r = CommitSave(p, [&] { return WriteSaveFiles(p); });
        SetSaving(false);
        ReportSave(log, s, r, steps_done, reason);
        return "";
      }
      SetSaving(true);
      const SaveResult r =
          SaveCheckpoint(s.checkpoints_dir(), model, optimizer, st, s.config, hooks, tp);
      SetSaving(false);
      ReportSave(log, s, r, steps_done, reason);
    }
    return "";
  });
}

}  // namespace baton
