#include "trainer/tools/plan_memory_inputs.h"

#include <vector>

#include "schema/exit_codes.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/length_bucket_sampler.h"
#include "trainer/fail.h"
#include "trainer/train/train_step.h"

namespace baton {

namespace {

// The dataset's (or the flags') per-episode sizes.
void CheckShape(const DatasetShape& shape, const std::string& source, bool flags, int exit_code) {
  using L = PlanSizeLimits;
  const std::string hint = flags ? "fix the flag" : "fix " + source + " (or re-import it)";
  auto name = [&](const char* flag, const char* key) {
    return flags ? std::string(flag) : source + ": " + key;
  };
  CheckPlanSize(shape.height, 1, L::kPixels, name("--height", "latent height"), exit_code, hint);
  CheckPlanSize(shape.width, 1, L::kPixels, name("--width", "latent width"), exit_code, hint);
  CheckPlanSize(shape.action_steps, 1, L::kActionSteps, name("--action-steps", "action_steps"),
                exit_code, hint);
  CheckPlanSize(shape.text_len, 1, L::kTextLen, name("--text-len", "text_len"), exit_code, hint);
  // 0: not known yet (no dataset; config.json gives them).
  CheckPlanSize(shape.channels, 0, L::kChannels, name("--channels", "channels"), exit_code, hint);
  CheckPlanSize(shape.action_dim, 0, L::kChannels, name("--action-dim", "action_dim"), exit_code,
                hint);
  CheckPlanSize(shape.text_dim, 0, L::kChannels, name("--text-dim", "text_dim"), exit_code, hint);
}

// model.init_from's config.json (65: it is a file of the upstream folder, not the run config).
void CheckUpstreamDims(const ModelDims& d, const std::string& dir) {
  using L = PlanSizeLimits;
  const std::string file = dir + "/config.json: ";
  const std::string hint = "fix " + dir + "/config.json, or point model.init_from elsewhere";
  CheckPlanSize(d.heads, 1, L::kHeads, file + "num_attention_heads", kExitData, hint);
  CheckPlanSize(d.dim, 1, L::kDim, file + "num_attention_heads x attention_head_dim", kExitData,
                hint);
  CheckPlanSize(d.layers, 1, L::kLayers, file + "num_layers", kExitData, hint);
  CheckPlanSize(d.ffn_dim, 1, L::kFfnDim, file + "ffn_dim", kExitData, hint);
  CheckPlanSize(d.freq_dim, 1, L::kFreqDim, file + "freq_dim", kExitData, hint);
  CheckPlanSize(d.patch, 1, L::kPatch, file + "patch_size", kExitData, hint);
  CheckPlanSize(d.channels, 1, L::kChannels, file + "in_channels", kExitData, hint);
  CheckPlanSize(d.action_dim, 1, L::kChannels, file + "action_dim", kExitData, hint);
  CheckPlanSize(d.text_dim, 1, L::kChannels, file + "text_dim", kExitData, hint);
}

// The data's sizes and the longest episode's latent frames: from the flags, or from the dataset
// (whose longest episode is read, so its file must agree with its n_video).
DatasetShape ReadShape(const RunConfig& config, const std::string& config_path,
                       const PlanRowFlags& flags, int64_t* longest) {
  DatasetShape shape;
  if (flags.frames > 0) {
    shape.height = flags.height, shape.width = flags.width;
    shape.action_steps = flags.action_steps, shape.text_len = flags.text_len;
    shape.channels = flags.channels, shape.action_dim = flags.action_dim;
    shape.text_dim = flags.text_dim;
    CheckPlanSize(flags.frames, 1, PlanSizeLimits::kFrames, "--frames", kExitUsage, "fix the flag");
    CheckShape(shape, "", /*flags=*/true, kExitUsage);
    *longest = flags.frames;
    return shape;
  }
  auto loaded = LoadDatasetIndex(config.data.path);
  if (!loaded.ok()) {
    FailAt(__FILE__, __LINE__, kExitData, loaded.status().ToString(),
           "check data.path in " + config_path + ", or state the row with --frames");
  }
  const DatasetIndex index = std::move(loaded).value();
  if (index.shape) {
    shape = *index.shape;
  } else {
    auto first = ReadEpisode(index, 0);
    if (!first.ok()) FailAt(__FILE__, __LINE__, first.status(), "fix the episode named above");
    shape = first->shape;
  }
  CheckShape(shape, config.data.path, /*flags=*/false, kExitData);
  int64_t longest_episode = 0;
  for (size_t i = 0; i < index.episodes.size(); ++i) {
    if (index.episodes[i].frames > *longest) {
      *longest = index.episodes[i].frames;
      longest_episode = int64_t(i);
    }
  }
  // The row is planned from the longest episode's n_video: its file must agree (a lying
  // n_video would plan a row that is not there, and could be any size).
  CheckPlanSize(*longest, 1, PlanSizeLimits::kFrames,
                config.data.path + ": latent frames of episode '" +
                    index.episodes[size_t(longest_episode)].id + "' (from its n_video)",
                kExitData, "fix n_video in meta/episodes.jsonl");
  auto episode = ReadEpisode(index, longest_episode);
  if (!episode.ok()) {
    FailAt(__FILE__, __LINE__, episode.status(),
           "the memory plan reads the longest episode; fix it or its n_video");
  }
  return shape;
}

// The model's sizes: the config's model: keys, or the folder's config.json (whose sizes stand in
// for the data's without a dataset).
ModelDims PlanDims(const RunConfig& config, const PlanRowFlags& flags, DatasetShape& shape) {
  ModelDims dims = MakeModelDims(config, shape);
  const std::string init_from = !flags.init_from.empty() ? flags.init_from : config.model.init_from;
  if (!init_from.empty()) {
    const std::string dir = FindTransformerDir(init_from);
    ModelDims init = ReadUpstreamDims(dir);
    CheckUpstreamDims(init, dir);
    if (shape.channels == 0) dims.channels = shape.channels = init.channels;
    if (shape.action_dim == 0) dims.action_dim = shape.action_dim = init.action_dim;
    if (shape.text_dim == 0) dims.text_dim = shape.text_dim = init.text_dim;
    dims = ReconcileInitDims(init, dir, config.model, dims);
  }
  if (dims.channels < 1 || dims.action_dim < 1 || dims.text_dim < 1) {
    BATON_FAIL(kExitConfig,
               "plan-memory: latent channels, action and text sizes are unknown without a "
               "dataset",
               "give --channels, --action-dim and --text-dim, or --init-from a folder");
  }
  if (shape.height % dims.patch != 0 || shape.width % dims.patch != 0) {
    BATON_FAIL(kExitConfig,
               "model.patch_size " + std::to_string(dims.patch) +
                   " does not divide the latent size " + std::to_string(shape.height) + "x" +
                   std::to_string(shape.width),
               "choose a patch size that divides H and W");
  }
  return dims;
}

}  // namespace

void CheckPlanSize(int64_t v, int64_t lo, int64_t hi, const std::string& what, int exit_code,
                   const std::string& hint) {
  if (v >= lo && v <= hi) return;
  FailAt(__FILE__, __LINE__, exit_code,
         "plan-memory: " + what + " is " + std::to_string(v) + ", outside [" + std::to_string(lo) +
             ", " + std::to_string(hi) + "]",
         hint);
}

PlanInputs GatherPlanInputs(const RunConfig& config, const std::string& config_path,
                            const PlanRowFlags& flags) {
  PlanInputs in;
  int64_t longest = 0;
  DatasetShape shape = ReadShape(config, config_path, flags, &longest);
  in.row_source = flags.frames > 0 ? "--frames" : config.data.path;
  const ModelDims dims = PlanDims(config, flags, shape);

  PlanModel& m = in.model;
  m.channels = dims.channels, m.patch = dims.patch, m.action_dim = dims.action_dim;
  m.text_dim = dims.text_dim, m.dim = dims.dim, m.heads = dims.heads, m.layers = dims.layers;
  m.ffn_dim = dims.ffn_dim, m.freq_dim = dims.freq_dim;

  // The longest row: batch_size episodes (the sampler fills every batch), padded to the
  // longest episode's round_up(F, pad_multiple); as a bound, every episode that long.
  PlanRow& row = in.row;
  row.batch = config.data.batch_size;
  row.padded_frames = RoundUp(longest, config.data.pad_multiple);
  row.height = shape.height, row.width = shape.width;
  row.action_steps = shape.action_steps, row.text_len = shape.text_len;
  const Status planned =
      PlanRowAttention(&row, std::vector<int64_t>(size_t(row.batch), longest), dims.patch,
                       dims.head_dim(), config.objective.chunk_min, config.objective.chunk_max,
                       config.objective.window_max, dims.heads);
  if (!planned.ok()) {
    // The row comes from the flags, or from the dataset's longest episode and the run
    // config's data.batch_size and objective: chunk and window.
    const bool from_flags = flags.frames > 0;
    FailAt(__FILE__, __LINE__, from_flags ? kExitUsage : kExitConfig,
           "plan-memory: " + planned.message() + " (from " +
               (from_flags ? std::string("--frames, --height, --width, --action-steps")
                           : config.data.path + " and " + config_path +
                                 ": data.batch_size, objective.chunk_min/chunk_max/window_max") +
               ")",
           from_flags ? "give the sizes of a row that can be trained"
                      : "lower data.batch_size or objective.window_max, or check the dataset's "
                        "longest episode");
  }
  return in;
}

}  // namespace baton
