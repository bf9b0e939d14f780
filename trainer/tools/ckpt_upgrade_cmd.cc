// `baton-train ckpt upgrade DIR`: converts a format-version-1 checkpoint (baton's own parameter
// names) into version 2 (upstream's state-dict keys), in place and atomically: the new folder is
// built beside it, the old one is kept as DIR.v1, then the new one takes its name.
//
// What changes: names; blocks.*.modulation [6, D] and head_modulation [2, D] gain upstream's
// leading 1; head_video's rows are permuted from channel-major (c * P + k) to upstream's
// patch-major (k * C + c), which together with the new unpatchify order gives the same video
// prediction; the action stream's new time projection and the unused action text projection
// are copies of the shared ones (AdamW moments too), so the upgraded model computes what the old
// one did except for what version 2 fixed on purpose (action RoPE positions, masked action
// inputs). transformer/ is written as fp32 like a default save.
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/ckpt/v1_model_config.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"
#include "trainer/tools/v1_checkpoint.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// Version-1 name -> version-2 names (a shared layer maps to two), and the tensor transform.
struct Renamed {
  std::vector<std::string> names;
  std::function<torch::Tensor(const torch::Tensor&)> fn;
};

Renamed Rename(const std::string& old, const ModelDims& d) {
  auto same = [](const torch::Tensor& t) { return t; };
  static const std::vector<std::pair<std::regex, std::vector<std::string>>> kRules = {
      {std::regex("patch_embedding\\.(weight|bias)"), {"patch_embedding_mlp.$1"}},
      {std::regex("action_embedding\\.(weight|bias)"), {"action_embedder.$1"}},
      {std::regex("time_embedding_video\\.0\\.(weight|bias)"),
       {"condition_embedder.time_embedder.linear_1.$1"}},
      {std::regex("time_embedding_video\\.2\\.(weight|bias)"),
       {"condition_embedder.time_embedder.linear_2.$1"}},
      {std::regex("time_embedding_action\\.0\\.(weight|bias)"),
       {"condition_embedder_action.time_embedder.linear_1.$1"}},
      {std::regex("time_embedding_action\\.2\\.(weight|bias)"),
       {"condition_embedder_action.time_embedder.linear_2.$1"}},
      {std::regex("time_projection\\.(weight|bias)"),
       {"condition_embedder.time_proj.$1", "condition_embedder_action.time_proj.$1"}},
      {std::regex("text_embedding\\.0\\.(weight|bias)"),
       {"condition_embedder.text_embedder.linear_1.$1",
        "condition_embedder_action.text_embedder.linear_1.$1"}},
      {std::regex("text_embedding\\.2\\.(weight|bias)"),
       {"condition_embedder.text_embedder.linear_2.$1",
        "condition_embedder_action.text_embedder.linear_2.$1"}},
      {std::regex("blocks\\.([0-9]+)\\.self_attn_([qkv])\\.(weight|bias)"),
       {"blocks.$1.attn1.to_$2.$3"}},
      {std::regex("blocks\\.([0-9]+)\\.self_attn_o\\.(weight|bias)"),
       {"blocks.$1.attn1.to_out.0.$2"}},
      {std::regex("blocks\\.([0-9]+)\\.self_attn_norm_([qk])\\.weight"),
       {"blocks.$1.attn1.norm_$2.weight"}},
      {std::regex("blocks\\.([0-9]+)\\.cross_attn_([qkv])\\.(weight|bias)"),
       {"blocks.$1.attn2.to_$2.$3"}},
      {std::regex("blocks\\.([0-9]+)\\.cross_attn_o\\.(weight|bias)"),
       {"blocks.$1.attn2.to_out.0.$2"}},
      {std::regex("blocks\\.([0-9]+)\\.cross_attn_norm_([qk])\\.weight"),
       {"blocks.$1.attn2.norm_$2.weight"}},
      {std::regex("blocks\\.([0-9]+)\\.norm3\\.(weight|bias)"), {"blocks.$1.norm2.$2"}},
      {std::regex("blocks\\.([0-9]+)\\.ffn_0\\.(weight|bias)"), {"blocks.$1.ffn.net.0.proj.$2"}},
      {std::regex("blocks\\.([0-9]+)\\.ffn_2\\.(weight|bias)"), {"blocks.$1.ffn.net.2.$2"}},
      {std::regex("head_action\\.(weight|bias)"), {"action_proj_out.$1"}},
  };
  for (const auto& [re, outs] : kRules) {
    if (!std::regex_match(old, re)) continue;
    Renamed r;
    for (const auto& o : outs) r.names.push_back(std::regex_replace(old, re, o));
    r.fn = same;
    return r;
  }
  static const std::regex kMod("blocks\\.([0-9]+)\\.modulation");
  if (std::regex_match(old, kMod)) {
    return {{std::regex_replace(old, kMod, "blocks.$1.scale_shift_table")},
            [](const torch::Tensor& t) { return t.unsqueeze(0); }};
  }
  if (old == "head_modulation") {
    return {{"scale_shift_table"}, [](const torch::Tensor& t) { return t.unsqueeze(0); }};
  }
  if (old == "head_video.weight" || old == "head_video.bias") {
    const int64_t C = d.channels, P = d.patch * d.patch;
    return {{old == "head_video.weight" ? "proj_out.weight" : "proj_out.bias"},
            [C, P, old](const torch::Tensor& t) {
              if (t.dim() < 1 || t.size(0) != C * P) {
                BATON_FAIL(kExitData,
                           "version-1 tensor '" + old + "' has shape " +
                               ShapeString(t.sizes().vec()) + " but config.json's sizes give " +
                               std::to_string(C * P) + " rows (in_channels x patch_size^2)",
                           "the weights and config.json belong to different models");
              }
              // Row c * P + k (version 1) -> row k * C + c (upstream's proj_out).
              auto perm = torch::arange(C * P, torch::kInt64).view({C, P}).t().reshape({-1});
              return t.index_select(0, perm);
            }};
  }
  BATON_FAIL(kExitData, "version-1 tensor '" + old + "' has no version-2 name",
             "the checkpoint was not written by baton's version-1 model");
}

// Removes the partial folder unless the upgrade got through: a refused or failed upgrade leaves
// the folder as it found it.
struct PartialGuard {
  fs::path path;
  bool keep = false;
  ~PartialGuard() {
    if (keep) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The checkpoint folder itself however it is named ("ckpt/", ".", relative): the partial and the
// kept version-1 copy are its siblings, never inside it.
std::string FolderOf(const std::string& dir_in) {
  fs::path dir_path = fs::absolute(dir_in).lexically_normal();
  if (!dir_path.has_filename()) dir_path = dir_path.parent_path();
  return dir_path.string();
}

using Shapes = std::map<std::string, std::vector<int64_t>>;

// The weights under upstream's names, checked against the model's keys and shapes before the
// model is built.
TensorMap UpgradeWeights(const std::string& dir, const V1Checkpoint& v, const Shapes& expected) {
  TensorMap w;
  std::map<std::string, std::string> source;  // version-2 name -> version-1 name
  for (const auto& [name, t] : v.weights) {
    const Renamed r = Rename(name, v.d);
    for (const auto& n : r.names) {
      w[n] = r.fn(t);
      source[n] = name;
    }
  }
  for (const auto& [key, shape] : expected) {
    auto it = w.find(key);
    if (it == w.end())
      BATON_FAIL(kExitData, dir + ": no version-1 tensor gives '" + key + "'",
                 "the weights and config.json belong to different models");
    if (it->second.sizes().vec() != shape) {
      BATON_FAIL(kExitData,
                 v.weights_path + ": tensor '" + source[key] + "' gives '" + key + "' of shape " +
                     ShapeString(it->second.sizes().vec()) + " but config.json's sizes give " +
                     ShapeString(shape),
                 "the weights and config.json belong to different models");
    }
  }
  for (const auto& [key, t] : w) {
    if (!expected.count(key)) {
      BATON_FAIL(kExitData,
                 v.weights_path + ": tensor '" + source[key] +
                     "' is not part of the model config.json describes",
                 "the weights and config.json belong to different models");
    }
  }
  return w;
}

// The AdamW moments under upstream's names (the frozen action text projection has none).
TensorMap UpgradeMoments(const V1Checkpoint& v, const Shapes& expected) {
  TensorMap o;
  for (const auto& [key, t] : v.optimizer) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      BATON_FAIL(kExitData, v.optimizer_path + ": tensor '" + key + "' is not <kind>.<parameter>",
                 "the optimizer file is damaged or not baton-train's; upgrade another checkpoint");
    }
    const std::string kind = key.substr(0, dot), name = key.substr(dot + 1);
    const Renamed r = Rename(name, v.d);
    for (const auto& n : r.names) {
      if (n.rfind("condition_embedder_action.text_embedder.", 0) == 0) continue;  // frozen
      torch::Tensor m = kind == "step" ? t : r.fn(t);
      const bool known = kind == "step" || kind == "exp_avg" || kind == "exp_avg_sq";
      if (!known || !expected.count(n) ||
          m.sizes().vec() != (kind == "step" ? std::vector<int64_t>{1} : expected.at(n))) {
        BATON_FAIL(kExitData,
                   v.optimizer_path + ": tensor '" + key + "' of shape " +
                       ShapeString(t.sizes().vec()) + " is not a moment of the model",
                   "the optimizer state and config.json belong to different models");
      }
      o[kind + "." + n] = m;
    }
  }
  return o;
}

void WriteTensors(const std::string& path, const TensorMap& map) {
  std::vector<StTensorRef> refs;
  std::vector<torch::Tensor> keep;
  for (const auto& [n, t] : map) {
    keep.push_back(t.contiguous());
    refs.push_back({n, ToStDType(t.scalar_type()), t.sizes().vec(), keep.back().data_ptr()});
  }
  BATON_CHECK_OK(WriteSafetensors(path, refs), "check disk space");
}

// The version-2 checkpoint, whole and synced, in `partial`.
void WriteV2(const fs::path& partial, VideoActionModel& model, const V1Checkpoint& v,
             const TensorMap& moments, const CheckpointManifest& m) {
  std::error_code ec;
  fs::create_directories(partial, ec);
  if (ec)
    BATON_FAIL(kExitIo, partial.string() + ": cannot create: " + ec.message(),
               "check permissions and disk space beside the checkpoint");
  std::vector<std::string> files =
      WriteTransformerFolder((partial / "transformer").string(), model, torch::kFloat32,
                             CheckpointSection{}.max_shard_bytes, partial.string());
  if (v.dtype != torch::kFloat32) {
    TensorMap master;
    for (const auto& p : model->named_parameters()) master[p.key()] = p.value().detach();
    WriteTensors((partial / kMasterWeightsFile).string(), master);
    files.push_back(kMasterWeightsFile);
  }
  WriteTensors((partial / kOptimizerFile).string(), moments);
  files.push_back(kOptimizerFile);
  nlohmann::ordered_json state = v.state;
  state["format_version"] = kCheckpointFormatVersion;
  state["config_hash"] = ConfigHash(v.d);
  BATON_CHECK_OK(WriteTextAtomic((partial / kStateFile).string(), state.dump(2) + "\n"),
                 "check disk space");
  files.push_back(kStateFile);
  CheckpointManifest nm = m;
  nm.format_version = kCheckpointFormatVersion;
  nm.finite = true;  // checked when read
  nm.config_hash = ConfigHash(v.d);
  BATON_CHECK_OK(WriteManifest(partial.string(), nm, files), "check disk space");
  BATON_CHECK_OK(FsyncDir((partial / "transformer").string()),
                 "check that the checkpoint's filesystem supports fsync");
  BATON_CHECK_OK(FsyncDir(partial.string()),
                 "check that the checkpoint's filesystem supports fsync");
}

// `partial` takes `dir`'s name, the version-1 folder kept beside it as `kept`; on a failed
// rename the version-1 folder gets its name back.
void SwapIn(const std::string& dir, const fs::path& partial, const std::string& kept) {
  std::error_code ec;
  fs::rename(dir, kept, ec);
  if (ec)
    BATON_FAIL(kExitIo, dir + ": cannot move aside to " + kept + ": " + ec.message(),
               "check permissions in the checkpoint's parent folder; nothing was changed");
  fs::rename(partial, dir, ec);
  if (ec) {
    std::error_code back;
    fs::rename(kept, dir, back);  // the version-1 folder under its own name again
    BATON_FAIL(kExitIo, partial.string() + ": cannot rename to " + dir + ": " + ec.message(),
               back ? "the version-1 folder is " + kept : "");
  }
}

int Upgrade(const std::string& dir_in) {
  const std::string dir = FolderOf(dir_in);
  auto m = ReadManifest(dir);
  if (!m.ok())
    FailAt(__FILE__, __LINE__, kExitData, m.status().ToString(),
           "point ckpt-upgrade at one checkpoint folder (<run>/checkpoints/step_N)");
  if (m->format_version == kCheckpointFormatVersion) {
    std::printf("%s is already format version %d: nothing to do\n", dir.c_str(),
                kCheckpointFormatVersion);
    return kExitOk;
  }
  if (m->format_version != 1 || m->kind != "full") {
    BATON_FAIL(kExitData,
               dir + ": format version " + std::to_string(m->format_version) + ", kind " + m->kind +
                   ": only full version-1 checkpoints can be upgraded",
               "a newer or partial checkpoint needs no upgrade; resume from it as it is");
  }
  CheckManifestVouches(dir, *m);
  const V1Checkpoint v = ReadV1Checkpoint(dir);
  Shapes expected;
  for (const auto& [key, shape] : UpstreamParameterShapes(v.d)) expected[key] = shape;
  const TensorMap w = UpgradeWeights(dir, v, expected);
  const TensorMap o = UpgradeMoments(v, expected);

  VideoActionModel model(v.d);
  model->to(v.dtype);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) p.value().copy_(w.at(p.key()));
  }
  const fs::path partial = dir + ".upgrade" + kPartialSuffix;
  std::error_code ec;
  fs::remove_all(partial, ec);
  PartialGuard guard{partial};
  WriteV2(partial, model, v, o, *m);
  const std::string kept = dir + ".v1";
  SwapIn(dir, partial, kept);
  guard.keep = true;
  BATON_CHECK_OK(FsyncDir(fs::path(dir).parent_path().string()),
                 "check that the checkpoint's filesystem supports fsync");
  std::printf(
      "upgraded %s to format version %d (%zu tensors under upstream's names); the version-1 "
      "folder is kept as %s\n"
      "  condition_embedder_action.time_proj (new: the action stream's own time projection) and "
      "the unused condition_embedder_action.text_embedder are copies of the shared layers, AdamW "
      "moments included, so the upgraded model computes what the old one did, except for the "
      "two fixes of version 2: action RoPE positions f + (n+1)/(N+1) and masked action inputs\n",
      dir.c_str(), kCheckpointFormatVersion, w.size(), kept.c_str());
  return kExitOk;
}

}  // namespace

void AddCkptUpgrade(CLI::App* ckpt, CommandFn* selected) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = ckpt->add_subcommand(
      "upgrade", "Convert a format-version-1 checkpoint to version 2 (upstream names), in place");
  cmd->add_option("dir", *dir, "checkpoint_step_<N> folder")->required();
  cmd->callback([=] { *selected = [=] { return Upgrade(*dir); }; });
}

}  // namespace baton
