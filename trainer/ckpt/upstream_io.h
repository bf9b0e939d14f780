// The transformer/ folder in upstream's format (diffusers' WanTransformer3DModel layout):
// config.json with the 15 constructor keys, weights under upstream's state-dict keys in one
// safetensors file or in shards with diffusers' index json. Every baton checkpoint holds one, and
// `--init-from` / `model.init_from` / `baton-train forward` read one (docs/upstream.md).
//
// Reading is strict where upstream's loader would fail later or silently: a missing tensor, a
// wrong shape, an unexpected key (other than Wan2.2's `patch_embedding.{weight,bias}`, which
// the released base carries and upstream ignores), a tensor the index does not name, or a NaN
// is exit 65 naming the key and the file; config.json's sizes are checked against the shards'
// headers before a model of those sizes exists; any float dtype is converted to the model's.
// Writing is atomic per file (the caller makes the folder atomic). config.json, its sizes and the
// index's weight map are upstream_config.h. Stateless functions; not thread-safe on one model.
#pragma once

#include <torch/torch.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/upstream_config.h"
#include "trainer/model/video_action_model.h"

namespace baton {

// The folder's weights against `dims` before a model of that size is allocated, from the
// safetensors headers alone: the index and the shards must agree both ways (a tensor a shard
// holds but the index does not name is refused), num_layers must be the number of blocks the
// files hold, each size the shape of the tensor that shows it (exit 65 naming the config.json
// key, e.g. "ffn_dim is 4000000000000 but ...: tensor 'blocks.0.ffn.net.0.proj.weight' has shape
// [96, 48]"), then every key present with its shape and a float dtype, and no unexpected one.
// Afterwards the model is no larger than the tensors the files hold.
void CheckTransformerWeights(const std::string& transformer_dir, const ModelDims& dims);

// Every parameter of `model` from the folder's weights (index + shards, or one file), converted
// to the parameter's dtype, after CheckTransformerWeights' checks. Exit 65 naming key and file
// for a missing, mis-shaped or unexpected tensor, and for one holding NaN or Inf (checked in the
// parameter's dtype). Returns the bytes of tensor data read.
int64_t LoadTransformerWeights(const std::string& transformer_dir, VideoActionModel& model);

// Writes config.json and the weights (in `dtype`, sharded when they exceed `max_shard_bytes`)
// into `transformer_dir` (created). Returns the files written, relative to `relative_to`.
std::vector<std::string> WriteTransformerFolder(const std::string& transformer_dir,
                                                VideoActionModel& model, torch::Dtype dtype,
                                                int64_t max_shard_bytes,
                                                const std::string& relative_to);

// fp32 | bf16 (checkpoint.export_dtype) as a torch dtype.
torch::Dtype ExportDtype(ExportDType dtype);

// Safetensors dtype <-> torch dtype (F64, F32, BF16, F16, I64, I32; exit 70 for others).
StDType ToStDType(torch::ScalarType t);
torch::ScalarType ToTorchDtype(StDType t);

}  // namespace baton
