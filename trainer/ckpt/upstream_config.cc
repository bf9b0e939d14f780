#include "trainer/ckpt/upstream_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "schema/atomic_file.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

std::string Join(const std::vector<int64_t>& v) { return ShapeString(v); }

// Every size config.json gives is at most this (and so is the model width and the patch
// feature count): products of two of them fit in int64 without checks.
constexpr int64_t kMaxUpstreamSize = (int64_t(1) << 31) - 1;

}  // namespace

nlohmann::ordered_json UpstreamConfigJson(const ModelDims& d) {
  return {{"_class_name", "WanTransformer3DModel"},
          {"_diffusers_version", kDiffusersVersion},
          {"patch_size", {1, d.patch, d.patch}},
          {"num_attention_heads", d.heads},
          {"attention_head_dim", d.head_dim()},
          {"in_channels", d.channels},
          {"out_channels", d.channels},
          {"action_dim", d.action_dim},
          {"text_dim", d.text_dim},
          {"freq_dim", d.freq_dim},
          {"ffn_dim", d.ffn_dim},
          {"num_layers", d.layers},
          {"cross_attn_norm", true},
          {"eps", d.eps},
          {"rope_max_seq_len", 1024},
          {"pos_embed_seq_len", nullptr},
          {"attn_mode", "torch"},
          {"_baton_action_steps", d.action_steps},
          {"_baton_rope_theta", d.rope_theta}};
}

std::string FindTransformerDir(const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(dir) / kUpstreamConfigName, ec)) return dir;
  const fs::path sub = fs::path(dir) / "transformer";
  if (fs::is_regular_file(sub / kUpstreamConfigName, ec)) return sub.string();
  BATON_FAIL(kExitConfig,
             dir + ": neither " + (fs::path(dir) / kUpstreamConfigName).string() + " nor " +
                 (sub / kUpstreamConfigName).string() + " exists",
             "pass an upstream transformer/ folder (config.json + safetensors) or its parent");
}

std::map<std::string, std::string> ReadWeightMap(const std::string& index_path) {
  auto text = ReadFile(index_path);
  if (!text.ok()) {
    BATON_FAIL(kExitData, index_path + ": unreadable: " + text.status().message(),
               "check that the upstream folder is complete and readable");
  }
  const auto j = nlohmann::json::parse(text.value(), nullptr, false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    BATON_FAIL(kExitData, index_path + ": no \"weight_map\" object",
               "a diffusers index names each tensor's shard");
  }
  std::map<std::string, std::string> map;
  for (const auto& [k, v] : j["weight_map"].items()) {
    if (!v.is_string())
      BATON_FAIL(kExitData, index_path + ": weight_map['" + k + "'] is not a file name",
                 "a diffusers index maps each tensor name to a shard file name");
    // Confined to the index's folder: a relative path with no `..` (diffusers writes bare file
    // names). A symlink inside the folder is followed, as the Hugging Face cache needs.
    const std::string name = v.get<std::string>();
    const fs::path rel(name);
    bool inside = !name.empty() && rel.is_relative() && !rel.has_root_name();
    for (const auto& part : rel) inside = inside && part != ".." && part != "." && !part.empty();
    if (!inside) {
      BATON_FAIL(kExitData,
                 index_path + ": weight_map['" + k + "'] = \"" + name +
                     "\" is not a file inside the index's folder",
                 "an index names shards beside it; a path with .. or an absolute one is refused");
    }
    map[k] = name;
  }
  return map;
}

namespace {

constexpr const char* kNotUpstream = "config.json is damaged or not upstream's transformer config";

// One upstream config.json, read key by key; every refusal names the file and the key.
struct UpstreamConfigKeys {
  std::string path;
  nlohmann::json j;

  // Sizes are bounded here so that no product below can overflow; whether the weights really
  // have them is CheckTransformerWeights' job, before anything of that size is allocated.
  int64_t Int(const char* key, int64_t def) const {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_number_integer() || j[key].get<int64_t>() < 1 ||
        j[key].get<int64_t>() > kMaxUpstreamSize) {
      BATON_FAIL(kExitData,
                 path + ": " + key + " must be an integer in [1, " +
                     std::to_string(kMaxUpstreamSize) + "], got " + j[key].dump(),
                 kNotUpstream);
    }
    return j[key].get<int64_t>();
  }

  // The product of two bounded sizes, itself bounded (both factors are <= 2^31, so the int64
  // product is exact).
  int64_t Product(int64_t a, int64_t b, const std::string& what) const {
    if (a * b > kMaxUpstreamSize) {
      BATON_FAIL(kExitData,
                 path + ": " + what + " = " + std::to_string(a * b) + " exceeds " +
                     std::to_string(kMaxUpstreamSize),
                 "no weights file can hold a model of that width");
    }
    return a * b;
  }

  // patch_size's spatial patch: [1, p, p] ([1, 2, 2] when absent).
  int64_t Patch() const {
    std::vector<int64_t> patch = {1, 2, 2};
    if (j.contains("patch_size")) {
      const auto& p = j["patch_size"];
      bool ok = p.is_array() && p.size() == 3;
      for (size_t i = 0; ok && i < 3; ++i) {
        ok = p[i].is_number_integer() && p[i].get<int64_t>() >= 1 &&
             p[i].get<int64_t>() <= kMaxUpstreamSize;
      }
      if (!ok)
        BATON_FAIL(kExitData, path + ": patch_size must be [pt, ph, pw], got " + p.dump(),
                   kNotUpstream);
      patch = {p[0].get<int64_t>(), p[1].get<int64_t>(), p[2].get<int64_t>()};
    }
    if (patch[0] != 1 || patch[1] != patch[2]) {
      BATON_FAIL(kExitData, path + ": patch_size " + Join(patch) + " is not [1, p, p]",
                 "baton builds square spatial patches of one latent frame");
    }
    return patch[1];
  }

  // The ranges of the run config's model.eps and model.rope_theta: outside them the forward is
  // NaN (theta 0) or meaningless (an eps that swamps every activation).
  void ReadEpsAndTheta(ModelDims& d) const {
    if (j.contains("eps")) {
      const auto& e = j["eps"];
      if (!e.is_number() || !std::isfinite(e.get<double>()) || e.get<double>() <= 0 ||
          e.get<double>() > 1) {
        BATON_FAIL(kExitData, path + ": eps must be a number in (0, 1], got " + e.dump(),
                   "upstream's models use 1e-6");
      }
      d.eps = e.get<double>();
    }
    if (j.contains("_baton_rope_theta") && !j["_baton_rope_theta"].is_null()) {
      const auto& t = j["_baton_rope_theta"];
      if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 1) {
        BATON_FAIL(kExitData,
                   path + ": _baton_rope_theta must be a finite number >= 1, got " + t.dump(),
                   "upstream's RoPE uses 10000 (leave the key out for that)");
      }
      d.rope_theta = t.get<double>();
    }
  }

  // baton's blocks always have the affine norm before cross-attention.
  void CheckCrossAttnNorm() const {
    if (j.contains("cross_attn_norm") &&
        !(j["cross_attn_norm"].is_boolean() && j["cross_attn_norm"].get<bool>())) {
      BATON_FAIL(kExitData,
                 path + ": cross_attn_norm " + j["cross_attn_norm"].dump() + " is not supported",
                 "baton's blocks always have the affine norm2 before cross-attention");
    }
  }

  // What baton's 3-axis RoPE and timestep embedding can be.
  void CheckRope(const ModelDims& d, int64_t hd) const {
    if (hd % 6 == 4 || hd % 2 != 0 || hd < 6) {
      BATON_FAIL(kExitData,
                 path + ": attention_head_dim " + std::to_string(hd) +
                     (hd % 6 == 4 ? " is 4 mod 6, where upstream's 3-axis RoPE has the wrong width"
                                  : " must be even and >= 6 for 3-axis RoPE"),
                 "such a checkpoint cannot have come from upstream's model");
    }
    if (d.freq_dim % 2 != 0) {
      BATON_FAIL(kExitData, path + ": freq_dim " + std::to_string(d.freq_dim) + " must be even",
                 "such a checkpoint cannot have come from upstream's model");
    }
  }
};

}  // namespace

ModelDims ReadUpstreamDims(const std::string& tdir) {
  UpstreamConfigKeys c;
  c.path = (fs::path(tdir) / kUpstreamConfigName).string();
  auto text = ReadFile(c.path);
  if (!text.ok())
    BATON_FAIL(
        kExitData, c.path + ": unreadable: " + text.status().message(),
        "check model.init_from: an upstream transformer/ folder holds a readable config.json");
  c.j = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (!c.j.is_object()) BATON_FAIL(kExitData, c.path + ": not a JSON object", kNotUpstream);
  ModelDims d;
  d.zero_init = false;
  d.action_steps = 0;
  d.patch = c.Patch();
  d.heads = c.Int("num_attention_heads", 24);
  const int64_t hd = c.Int("attention_head_dim", 128);
  d.dim = c.Product(d.heads, hd, "num_attention_heads x attention_head_dim");
  d.channels = c.Int("in_channels", 48);
  const int64_t out = c.Int("out_channels", 48);
  if (out != d.channels) {
    BATON_FAIL(kExitData,
               c.path + ": out_channels " + std::to_string(out) + " differs from in_channels " +
                   std::to_string(d.channels),
               "baton predicts the flow of its own latents: both must be equal");
  }
  c.Product(c.Product(d.channels, d.patch, "in_channels x patch_size[1]"), d.patch,
            "in_channels x patch_size[1] x patch_size[2]");
  d.action_dim = c.Int("action_dim", 30);
  d.text_dim = c.Int("text_dim", 4096);
  d.freq_dim = c.Int("freq_dim", 256);
  d.ffn_dim = c.Int("ffn_dim", 14336);
  d.layers = c.Int("num_layers", 30);
  c.CheckCrossAttnNorm();
  c.ReadEpsAndTheta(d);
  c.CheckRope(d, hd);
  return d;
}

ModelDims ReconcileInitDims(const ModelDims& init, const std::string& init_dir,
                            const ModelSection& model, const ModelDims& data) {
  std::vector<std::string> diffs;
  auto given = [&](const char* key) {
    return std::find(model.given.begin(), model.given.end(), key) != model.given.end();
  };
  auto cmp = [&](const char* key, const auto& run, const auto& folder, const char* folder_key) {
    if (given(key) && !(run == folder)) {
      std::ostringstream os;
      os << "model." << key << ": " << run << " (run config) vs " << folder << " (" << folder_key
         << ")";
      diffs.push_back(os.str());
    }
  };
  cmp("dim", model.dim, init.dim, "num_attention_heads x attention_head_dim");
  cmp("heads", model.heads, init.heads, "num_attention_heads");
  cmp("layers", model.layers, init.layers, "num_layers");
  cmp("ffn_dim", model.ffn_dim, init.ffn_dim, "ffn_dim");
  cmp("freq_dim", model.freq_dim, init.freq_dim, "freq_dim");
  cmp("patch_size", model.patch_size, init.patch, "patch_size[1]");
  cmp("eps", model.eps, init.eps, "eps");
  cmp("rope_theta", model.rope_theta, init.rope_theta, "_baton_rope_theta");
  auto data_cmp = [&](const char* what, int64_t ds, int64_t folder, const char* folder_key) {
    if (ds != folder) {
      diffs.push_back(std::string("dataset ") + what + ": " + std::to_string(ds) +
                      " (data.path) vs " + std::to_string(folder) + " (" + folder_key + ")");
    }
  };
  data_cmp("latent channels", data.channels, init.channels, "in_channels");
  data_cmp("action_dim", data.action_dim, init.action_dim, "action_dim");
  data_cmp("text_dim", data.text_dim, init.text_dim, "text_dim");
  if (!diffs.empty()) {
    std::string lines;
    for (const auto& d : diffs) lines += "\n    " + d;
    BATON_FAIL(kExitConfig, init_dir + "/config.json disagrees with the run:" + lines,
               "remove the model: keys (the sizes come from config.json) or fix them; a dataset "
               "of other sizes needs another checkpoint");
  }
  ModelDims d = init;
  d.action_steps = data.action_steps;
  d.zero_init = data.zero_init;
  // How the run computes, not what: train.activation_checkpointing applies to these sizes too.
  d.recompute_blocks = data.recompute_blocks;
  d.recompute_attention_entries = data.recompute_attention_entries;
  return d;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> UpstreamParameterShapes(
    const ModelDims& d) {
  const int64_t D = d.dim, pp = d.channels * d.patch * d.patch, A = d.action_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  auto lin = [&](const std::string& name, int64_t in, int64_t o) {
    out.push_back({name + ".weight", {o, in}});
    out.push_back({name + ".bias", {o}});
  };
  lin("patch_embedding_mlp", pp, D);
  lin("action_embedder", A, D);
  for (const std::string c : {"condition_embedder", "condition_embedder_action"}) {
    lin(c + ".time_embedder.linear_1", d.freq_dim, D);
    lin(c + ".time_embedder.linear_2", D, D);
    lin(c + ".time_proj", D, 6 * D);
    lin(c + ".text_embedder.linear_1", d.text_dim, D);
    lin(c + ".text_embedder.linear_2", D, D);
  }
  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    for (const std::string a : {"attn1", "attn2"}) {
      for (const char* proj : {".to_q", ".to_k", ".to_v", ".to_out.0"}) lin(b + a + proj, D, D);
      out.push_back({b + a + ".norm_q.weight", {D}});
      out.push_back({b + a + ".norm_k.weight", {D}});
    }
    out.push_back({b + "norm2.weight", {D}});
    out.push_back({b + "norm2.bias", {D}});
    lin(b + "ffn.net.0.proj", D, d.ffn_dim);
    lin(b + "ffn.net.2", d.ffn_dim, D);
    out.push_back({b + "scale_shift_table", {1, 6, D}});
  }
  lin("proj_out", D, pp);
  lin("action_proj_out", D, A);
  out.push_back({"scale_shift_table", {1, 2, D}});
  return out;
}

}  // namespace baton
