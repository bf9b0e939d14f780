// Reading a format-version-1 checkpoint for `baton-train ckpt upgrade` (ckpt_upgrade_cmd.cc):
// every file the upgrade reads is listed in the manifest and hashes to its entry, every tensor is
// finite, the weights hold one float dtype and trainer_state.json parses, all before anything is
// written, so damaged bytes are never converted into a valid version-2 checkpoint. Each refusal
// fails fast (exit 65) naming the file. No state.
#pragma once

#include <torch/torch.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "schema/checkpoint_manifest.h"
#include "trainer/model/model_dims.h"

namespace baton {

using TensorMap = std::map<std::string, torch::Tensor>;

// A version-1 checkpoint's contents, every file checked and parsed.
struct V1Checkpoint {
  ModelDims d;
  std::string weights_path, optimizer_path;
  TensorMap weights, optimizer;
  torch::ScalarType dtype = torch::kFloat32;  // the weights' one float dtype
  nlohmann::ordered_json state;
};

// Every file ReadV1Checkpoint reads is listed in `m` (the manifest of `dir`), and every listed file
// hashes to its entry.
void CheckManifestVouches(const std::string& dir, const CheckpointManifest& m);

// The checkpoint in `dir`, after CheckManifestVouches.
V1Checkpoint ReadV1Checkpoint(const std::string& dir);

}  // namespace baton
