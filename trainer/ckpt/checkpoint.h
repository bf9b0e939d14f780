// Full-state checkpoints: everything a resumed run needs to continue bit for bit.
//
//   checkpoint_step_<N>/
//     transformer/                  upstream's WanTransformer3DModel folder (upstream_io.h):
//                                   config.json + weights in checkpoint.export_dtype, sharded
//                                   above checkpoint.max_shard_bytes
//     master_weights.safetensors    the exact master weights, when the export dtype is not theirs
//     optimizer.safetensors     exp_avg.<p>, exp_avg_sq.<p>, step.<p> for every trainable parameter
//       or, on W > 1 ranks (optim.shard or replicated), each rank writing its own in parallel:
//     optimizer-0000r-of-0000W.safetensors   the same tensors of the parameters rank r-1 owns
//     optimizer.safetensors.index.json       which file holds each tensor
//     master_weights-0000r-of-0000W.safetensors + its index, and transformer/'s shards by owner
//     trainer_state.json        step, sampler cursor, RNG scheme, LR schedule, world size, hashes
//     MANIFEST.json             written last: sizes and XXH3 hashes of the files above
//
// Save first checks every weight and AdamW value for NaN/Inf and refuses (exit 79, diverged) to
// write a checkpoint from non-finite state; then writes into checkpoint_step_<N>.partial/,
// fsyncs every file and the folder, renames, and fsyncs the parent; then applies retention (keep
// the last K, every M-th and the best k by eval, never the newest valid one nor the newest one
// checked finite nor, with keep-best, one still waiting for its eval; .partial and invalid
// folders never count). Load verifies the manifest while reading and
// refuses a checkpoint of another model config (naming the differing keys) unless the caller
// asks for weights only. A save on W > 1 ranks is a team effort (checkpoint_save.cc): every rank
// writes about 1/W of the bytes, the files of the parameters it owns, into the .partial folder,
// rank 0 also the small files; only after every rank's files are durable does rank 0 write the
// manifest and rename, so a rank that dies mid-save leaves no checkpoint (only a .partial that
// the next save removes). A checkpoint loads on any number of ranks (checkpoint_load.cc): each
// rank reads every weight and the moments it owns, by name, from whichever file the index names.
// Format: docs/checkpoint_format.md. Not thread-safe.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "schema/run_config.h"
#include "trainer/ckpt/trainer_state.h"
#include "trainer/model/video_action_model.h"
#include "trainer/optim/adamw.h"

namespace baton {

// The first tensor of the model or the optimizer state (the moments this rank holds) with a NaN
// or Inf, as its name ("blocks.0.ffn.weight", "exp_avg_sq.blocks.0.ffn.weight"); "" when all are
// finite. `model` may be null: the optimizer state only.
std::string FirstNonFinite(VideoActionModel* model, const AdamW& optimizer);

// The parts of a config a checkpoint must match to be loaded as a full state.
nlohmann::ordered_json ModelConfigJson(const ModelDims& dims);
std::string ConfigHash(const ModelDims& dims);

struct SaveResult {
  std::string path;
  int64_t bytes = 0;  // all ranks' files
  double seconds = 0;
  std::vector<int64_t> rank_bytes;  // what each rank wrote (rank 0 knows every rank's)
};

// `before_manifest`/`before_rename` are fault-injection points for tests (may be empty).
struct SaveHooks {
  std::function<void()> mid_file, before_manifest, before_rename;
};

// The ranks of a sharded save and their agreements; SaveCheckpoint without one writes alone.
struct SaveTeam {
  int64_t rank = 0, world = 1;
  std::vector<int64_t> owner;          // per optimizer parameter, the rank that owns its moments
  std::function<bool(bool)> any_rank;  // logical OR across ranks
  // Runs this rank's part of a phase, then agrees with the others on how it went (every rank
  // fails alike when one did: failure_agreement.h); returns every rank's payload.
  std::function<std::vector<std::string>(const std::string& phase,
                                         const std::function<std::string()>& part)>
      agreed;
};

SaveResult SaveCheckpoint(const std::string& checkpoints_dir, VideoActionModel& model,
                          const AdamW& optimizer, const TrainerState& state,
                          const RunConfig& config, const SaveHooks& hooks = {},
                          const SaveTeam* team = nullptr);

// Applies keep_last / keep_every / keep_best (RetentionKeeps, with the run folder's eval
// results) under `checkpoints_dir`; returns the folders removed.
std::vector<std::string> ApplyRetention(const std::string& checkpoints_dir,
                                        const RunConfig& config);

enum class LoadMode { kFull, kWeightsOnly };

// Which rank of how many loads: the files no rank reads are hashed one rank each, by turn.
// `threads`: the CPU threads this rank may use to copy a file's bytes into the model (its share
// of the node's CPUs; at most 4 are used).
struct LoadShare {
  int64_t rank = 0, world = 1;
  int threads = 1;
};

// Loads weights (and, for kFull, the optimizer state) and returns the trainer state (for
// kWeightsOnly from a folder without trainer_state.json: step from the folder name), reading
// every byte once and checking the manifest's hashes on the way. Fails fast: exit 65 for a
// corrupt checkpoint, 78 for a config mismatch.
TrainerState LoadCheckpoint(const std::string& dir, VideoActionModel& model, AdamW* optimizer,
                            LoadMode mode, LoadShare share = {});

}  // namespace baton
