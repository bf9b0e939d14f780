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
// Writing is atomic per file (the caller makes the folder atomic). Model sizes and the 65/78 checks
// against a run config live here too. Stateless functions; not thread-safe on one model.
#pragma once

#include <torch/torch.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "schema/safetensors.h"
#include "trainer/model/video_action_model.h"

namespace baton {

inline constexpr const char* kDiffusersVersion = "0.36.0";

// config.json for `dims`: the 15 constructor keys (patch_size as [1, p, p]), `_class_name`,
// `_diffusers_version`, and baton's own fields as `_baton_*` keys (diffusers keeps `_` keys
// through a load/save). A pure function of the sizes: its dump is what ConfigHash hashes.
nlohmann::ordered_json UpstreamConfigJson(const ModelDims& dims);

// The folder that holds config.json: `dir` itself or `dir/transformer`. Exit 78 naming both
// places when neither has one.
std::string FindTransformerDir(const std::string& dir);

// Sizes from `<transformer_dir>/config.json` (missing keys take upstream's defaults, as
// diffusers does). Exit 65 for an unreadable file or a value of the wrong type; exit 65 for a
// head size upstream's RoPE cannot run (head_dim % 6 == 4) or a layout baton does not build
// (patch_size not [1, p, p], in_channels != out_channels, cross_attn_norm false); exit 65 for a
// size outside [1, 2^31) (the width num_attention_heads x attention_head_dim too), an `eps`
// outside (0, 1] or a `_baton_rope_theta` below 1 (the run config's ranges). Reads only
// config.json: CheckTransformerWeights says whether the weights have these sizes.
// `action_steps` is left 0 (it comes from the data).
ModelDims ReadUpstreamDims(const std::string& transformer_dir);

// The "weight_map" of a diffusers-style index (tensor name -> file name, relative to the index);
// fails fast (65) naming the file when it is unreadable or malformed, or when a file name is
// absolute or has a `..` (it must lie in the index's folder; a symlink there is followed, as in
// the Hugging Face cache). Used for weight shards and for the per-rank optimizer files of a
// sharded checkpoint.
std::map<std::string, std::string> ReadWeightMap(const std::string& index_path);

// The run's model sizes when they come from `init` (read from `init_dir`: model.init_from's
// folder at a fresh start, the run's own checkpoint's transformer/ on a resume): every model: key
// the config gave must agree with the folder's (exit 78 naming the key and both values), and so
// must the dataset's latent channels, action and text sizes.
ModelDims ReconcileInitDims(const ModelDims& init, const std::string& init_dir,
                            const ModelSection& model, const ModelDims& from_data);

// Upstream's state-dict keys and shapes of the model `dims` builds (29 + 27 x layers), in the
// model's order, computed without building it.
std::vector<std::pair<std::string, std::vector<int64_t>>> UpstreamParameterShapes(
    const ModelDims& dims);

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
