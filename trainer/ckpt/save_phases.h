// The three phases of a checkpoint save, so that the writing can run beside training.
//
//   PrepareSave   training thread: checks the state is finite and creates the .partial folder
//                 (both agreed across ranks), and lists this rank's files: which tensors go into
//                 which file, and the small files' text (rank 0). The tensors are references to
//                 the live state until SnapshotSave copies them.
//   SnapshotSave  training thread, async saves only: copies every listed tensor into host memory
//                 (pinned, with non-blocking copies and one synchronize, when the state is on a
//                 GPU), reusing the previous save's buffers when the shapes match. Afterwards the
//                 save needs nothing of the live model or optimizer.
//   WriteSaveFiles  any one thread: writes this rank's files into the .partial folder, each
//                 hashed while written and fsync'd; returns the manifest entries as the payload
//                 the ranks exchange. No collective: a background thread may run it.
//   CommitSave    training thread: gathers every rank's entries in one agreed collective (so
//                 a failure on any rank fails every rank alike), and rank 0 writes the manifest,
//                 renames the folder and applies retention.
//
// SaveCheckpoint (checkpoint.h) is Prepare + Commit with the writing inside the commit's
// agreement; an async save writes the same files from the snapshot, so both produce the same
// bytes. A PreparedSave is used by one thread at a time.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/checkpoint_manifest.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/tensor_file_io.h"

namespace baton {

// One tensor of a file: `dtype` set when the file stores it in another dtype (the export).
struct SaveTensor {
  std::string name;
  torch::Tensor tensor;
  std::optional<torch::Dtype> dtype;
};

// One file of this rank's part, relative to the .partial folder: tensors, or a small text.
struct SaveFile {
  std::string rel;
  std::vector<SaveTensor> tensors;
  std::map<std::string, std::string> metadata;
  bool small = false;
  std::string text;  // the small file's content
};

struct PreparedSave {
  std::string checkpoints_dir;
  std::filesystem::path final_dir, partial;
  int64_t step = 0;
  bool multi = false, leader = true;
  int64_t rank = 0, world = 1;
  SaveTeam team;  // copied: an async commit outlives the call that prepared it
  SaveHooks hooks;
  RunConfig config;             // checkpoint: what to write; all of it: retention's eval targets
  CheckpointManifest manifest;  // step, kind, world size, config hash; files filled at commit
  std::vector<SaveFile> files;  // this rank's, in the order they are written
  int64_t bytes = 0;            // what this rank writes (tensor data and small files)
  std::chrono::steady_clock::time_point t0;
};

PreparedSave PrepareSave(const std::string& checkpoints_dir, VideoActionModel& model,
                         const AdamW& optimizer, const TrainerState& state, const RunConfig& config,
                         const SaveHooks& hooks, const SaveTeam* team);

// Host buffers a snapshot copies into, kept from one async save to the next.
struct SnapshotBuffers {
  std::vector<torch::Tensor> tensors;
};

// Replaces every tensor of `p` by a host copy (in the dtype its file stores), in `buffers`.
void SnapshotSave(PreparedSave& p, SnapshotBuffers* buffers);

// The bytes SnapshotSave would hold for `p`.
int64_t SnapshotBytes(const PreparedSave& p);

// Writes this rank's files; the payload for CommitSave. `after_chunk` sees every write (may stop
// it, which fails with kExitIo "cancelled").
std::string WriteSaveFiles(const PreparedSave& p, const AfterChunk& after_chunk = {});

// Agrees on every rank's `part` (WriteSaveFiles, or the result of a background write) and, on
// rank 0, writes the manifest and renames. Collective when multi.
SaveResult CommitSave(const PreparedSave& p, const std::function<std::string()>& part);

}  // namespace baton
