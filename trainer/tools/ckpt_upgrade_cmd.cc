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
#include "trainer/fail.h"
#include "trainer/tools/commands.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

using TensorMap = std::map<std::string, torch::Tensor>;

TensorMap ReadAll(const std::string& path) {
  auto f = SafetensorsFile::Open(path);
  if (!f.ok()) FailAt(__FILE__, __LINE__, kExitData, f.status().ToString(), "");
  TensorMap out;
  for (const auto& t : (*f)->tensors()) {
    out[t.name] =
        torch::from_blob(const_cast<uint8_t*>((*f)->Data(t)), t.shape, ToTorchDtype(t.dtype))
            .clone();
  }
  return out;
}

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
    // Row c * P + k (version 1) -> row k * C + c (upstream's proj_out).
    auto perm = torch::arange(C * P, torch::kInt64).view({C, P}).t().reshape({-1});
    return {{old == "head_video.weight" ? "proj_out.weight" : "proj_out.bias"},
            [perm](const torch::Tensor& t) { return t.index_select(0, perm); }};
  }
  BATON_FAIL(kExitData, "version-1 tensor '" + old + "' has no version-2 name",
             "the checkpoint was not written by baton's version-1 model");
}

ModelDims DimsFromV1Config(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) BATON_FAIL(kExitData, path + ": unreadable: " + text.status().message(), "");
  const auto j = nlohmann::json::parse(text.value(), nullptr, false);
  ModelDims d;
  try {
    d.channels = j.at("in_channels").get<int64_t>();
    d.patch = j.at("patch_size").get<int64_t>();
    d.action_dim = j.at("action_dim").get<int64_t>();
    d.action_steps = j.at("action_steps").get<int64_t>();
    d.text_dim = j.at("text_dim").get<int64_t>();
    d.dim = j.at("dim").get<int64_t>();
    d.heads = j.at("num_heads").get<int64_t>();
    d.layers = j.at("num_layers").get<int64_t>();
    d.ffn_dim = j.at("ffn_dim").get<int64_t>();
    d.freq_dim = j.at("freq_dim").get<int64_t>();
    d.rope_theta = j.at("rope_theta").get<double>();
    d.eps = j.at("eps").get<double>();
  } catch (const std::exception& e) {
    BATON_FAIL(kExitData, path + ": not a version-1 baton model config: " + e.what(), "");
  }
  d.zero_init = false;
  return d;
}

int Upgrade(const std::string& dir_in) {
  const std::string dir = fs::path(dir_in).lexically_normal().string();
  auto m = ReadManifest(dir);
  if (!m.ok()) FailAt(__FILE__, __LINE__, kExitData, m.status().ToString(), "");
  if (m->format_version == kCheckpointFormatVersion) {
    std::printf("%s is already format version %d: nothing to do\n", dir.c_str(),
                kCheckpointFormatVersion);
    return kExitOk;
  }
  if (m->format_version != 1 || m->kind != "full") {
    BATON_FAIL(kExitData,
               dir + ": format version " + std::to_string(m->format_version) + ", kind " + m->kind +
                   ": only full version-1 checkpoints can be upgraded",
               "");
  }
  for (const auto& f : m->files) {  // never convert damaged bytes
    auto h = HashFile((fs::path(dir) / f.path).string());
    if (!h.ok() || h.value() != f.xxh3) {
      BATON_FAIL(kExitData, (fs::path(dir) / f.path).string() + ": hash differs from the manifest",
                 "the checkpoint is damaged; upgrade another one");
    }
  }
  const ModelDims d = DimsFromV1Config((fs::path(dir) / kModelConfigFile).string());
  const TensorMap old_w = ReadAll((fs::path(dir) / kWeightsFile).string());
  const TensorMap old_o = ReadAll((fs::path(dir) / kOptimizerFile).string());

  VideoActionModel model(d);
  const auto dtype = old_w.begin()->second.scalar_type();
  model->to(dtype);
  TensorMap w, o;
  for (const auto& [name, t] : old_w) {
    const Renamed r = Rename(name, d);
    for (const auto& n : r.names) w[n] = r.fn(t);
  }
  for (const auto& [key, t] : old_o) {
    const size_t dot = key.find('.');
    const std::string kind = key.substr(0, dot), name = key.substr(dot + 1);
    const Renamed r = Rename(name, d);
    for (const auto& n : r.names) {
      if (n.rfind("condition_embedder_action.text_embedder.", 0) == 0) continue;  // frozen
      o[kind + "." + n] = kind == "step" ? t : r.fn(t);
    }
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      auto it = w.find(p.key());
      if (it == w.end())
        BATON_FAIL(kExitData, dir + ": no version-1 tensor gives '" + p.key() + "'", "");
      p.value().copy_(it->second);
    }
  }

  const fs::path partial = dir + ".upgrade" + kPartialSuffix;
  std::error_code ec;
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  std::vector<std::string> files =
      WriteTransformerFolder((partial / "transformer").string(), model, torch::kFloat32,
                             CheckpointSection{}.max_shard_bytes, partial.string());
  auto write_map = [&](const std::string& path, const TensorMap& map) {
    std::vector<StTensorRef> refs;
    std::vector<torch::Tensor> keep;
    for (const auto& [n, t] : map) {
      keep.push_back(t.contiguous());
      refs.push_back({n, ToStDType(t.scalar_type()), t.sizes().vec(), keep.back().data_ptr()});
    }
    BATON_CHECK_OK(WriteSafetensors(path, refs), "check disk space");
  };
  if (dtype != torch::kFloat32) {
    TensorMap master;
    for (const auto& p : model->named_parameters()) master[p.key()] = p.value().detach();
    write_map((partial / kMasterWeightsFile).string(), master);
    files.push_back(kMasterWeightsFile);
  }
  write_map((partial / kOptimizerFile).string(), o);
  files.push_back(kOptimizerFile);
  auto state_text = ReadFile((fs::path(dir) / kStateFile).string());
  if (!state_text.ok()) FailAt(__FILE__, __LINE__, kExitData, state_text.status().ToString(), "");
  auto state = nlohmann::ordered_json::parse(state_text.value());
  state["format_version"] = kCheckpointFormatVersion;
  state["config_hash"] = ConfigHash(d);
  BATON_CHECK_OK(WriteTextAtomic((partial / kStateFile).string(), state.dump(2) + "\n"), "");
  files.push_back(kStateFile);
  CheckpointManifest nm = *m;
  nm.format_version = kCheckpointFormatVersion;
  nm.config_hash = ConfigHash(d);
  BATON_CHECK_OK(WriteManifest(partial.string(), nm, files), "check disk space");
  BATON_CHECK_OK(FsyncDir((partial / "transformer").string()), "");
  BATON_CHECK_OK(FsyncDir(partial.string()), "");
  const std::string kept = dir + ".v1";
  fs::rename(dir, kept, ec);
  if (ec) BATON_FAIL(kExitIo, dir + ": cannot move aside to " + kept + ": " + ec.message(), "");
  fs::rename(partial, dir, ec);
  if (ec)
    BATON_FAIL(kExitIo, partial.string() + ": cannot rename to " + dir + ": " + ec.message(), "");
  BATON_CHECK_OK(FsyncDir(fs::path(dir).parent_path().string()), "");
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
