// What a training segment runs on, set up once at its start (train_loop.cc's sections 1–3): the
// config, the ranks and this rank's device, the dataset and the sampler's options; and the run's
// identity, the fields an exact resume must find equal in a checkpoint. Fails fast (FailAt) on a
// config, data or device error. The Setup is owned by the segment; not thread-safe.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "schema/run_config.h"
#include "schema/run_folder.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/length_bucket_sampler.h"
#include "trainer/distributed/process_group.h"
#include "trainer/eval/eval_set.h"
#include "trainer/model/video_action_model.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/train_loop.h"
#include "trainer/train/trainer_environment.h"

namespace baton {

struct Setup {
  RunConfig config;
  TrainerEnvironment environment;  // read once by Train: the job and restart count too
  std::string run_dir;
  torch::Dtype dtype = torch::kFloat32;
  torch::Device device{torch::kCPU};
  DistEnv env;
  std::unique_ptr<ProcessGroupHandle> group;
  // The episodes the sampler draws from: data.path without eval:'s held-out episodes.
  std::shared_ptr<const DatasetIndex> index;
  EvalSet eval_set;  // the held-out set (trainer/eval/eval_set.h); empty without eval:
  DatasetShape shape;
  SamplerOptions sampler;
  bool leader() const { return env.rank == 0; }
  std::string checkpoints_dir() const { return RunFolder{run_dir}.CheckpointsDir(); }
};

// The tensor sizes of `index`'s episodes: its info.json's, else its first episode's.
DatasetShape ResolveShape(const DatasetIndex& index);

// 1. Config, 2. ranks (the heartbeat, determinism, the device, the process group), 3. data.
Setup SetUp(const TrainOptions& opt, const TrainerEnvironment& environment, SegmentLog& log);

// What the run is, independent of how far it got: the fields an exact resume must find equal.
TrainerState RunIdentity(const Setup& s, const ModelDims& dims);

}  // namespace baton
