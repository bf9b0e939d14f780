// The JSON half of upstream's transformer/ folder (upstream_io.h): config.json, its sizes and
// the parameter shapes they give, and a diffusers index's weight map. Plain JSON and arithmetic,
// no tensors, so that code that reads or checks sizes needs no libtorch.
//
// Reading config.json is strict where upstream's loader would fail later or silently: a value of
// the wrong type, a size out of range or a layout baton does not build is exit 65 naming the key
// and the file, before a model of those sizes exists. The model sizes' 78 checks against a run
// config live here too. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "schema/run_config.h"
#include "trainer/model/model_dims.h"

namespace baton {

inline constexpr const char* kDiffusersVersion = "0.36.0";

// The config file's name inside a transformer/ folder.
inline constexpr const char* kUpstreamConfigName = "config.json";

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

}  // namespace baton
