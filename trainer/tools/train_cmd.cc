// `baton-train train`: the training run (train/train_loop.h).
#include <memory>

#include "schema/resume_decision.h"
#include "trainer/tools/commands.h"
#include "trainer/train/train_loop.h"

namespace baton {

void RegisterTrain(CLI::App& app, CommandFn* selected) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd =
      app.add_subcommand("train", "Train the video-action model (exit 0 done, 75 requeue)");
  cmd->add_option("--config", o->config_path, "Run config (YAML)")->required();
  cmd->add_option("--run-dir", o->run_dir, "Run directory (default: run.dir of the config)");
  cmd->add_option("--events", o->events_path,
                  "Events file (default: <run_dir>/events/<job>.<restart>.jsonl)");
  cmd->add_option("--resume", o->resume, "auto | none | a checkpoint folder")
      ->capture_default_str();
  cmd->add_flag("--start-over", o->start_over,
                "With --resume none: move existing checkpoints aside instead of refusing");
  cmd->add_option("--resume-mode", o->resume_mode,
                  "weights_only: load weights alone (fresh AdamW, re-warmup)")
      ->check(CLI::IsMember({"", "exact", "weights_only"}));
  cmd->add_option("--expect-mode", o->expect_mode,
                  "The launcher's decision; refused if the checkpoint disagrees")
      ->check(CLI::IsMember(Words<ResumeMode>()));
  cmd->add_option("--expect-step0", o->expect_step0,
                  "The launcher's step0; refused if the checkpoint disagrees");
  cmd->add_option("--resume-warmup", o->resume_warmup,
                  "Steps of LR ramp after a weights-only resume (default: config)");
  cmd->add_option("--init-from", o->init_from,
                  "Upstream transformer/ folder (or its parent) to start from when the run has no "
                  "checkpoint (overrides model.init_from)");
  cmd->add_option("--step0", o->step0,
                  "With --init-from: continue that run at step N (LR from step N with the resume "
                  "warmup, fresh AdamW)");
  cmd->add_option("--stop-after", o->hooks.stop_after,
                  "Testing: stop as if signalled after N steps of this segment");
  cmd->add_option("--fault", o->hooks.fault,
                  "Testing: SIGKILL during a save, or (write_error) a write that fails")
      ->check(CLI::IsMember(
          {"mid_file", "before_manifest", "before_rename", "slow_save", "write_error"}));
  cmd->add_option("--fault-at-step", o->hooks.fault_at_step, "Testing: the save of this step dies");
  cmd->add_option("--fault-rank", o->hooks.fault_rank, "Testing: the rank that dies (default 0)");
  cmd->callback([=] { *selected = [=] { return Train(*o); }; });
}

}  // namespace baton
