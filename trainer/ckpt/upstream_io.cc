#include "trainer/ckpt/upstream_io.h"

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "schema/atomic_file.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

constexpr const char* kSingleName = "diffusion_pytorch_model.safetensors";
constexpr const char* kIndexName = "diffusion_pytorch_model.safetensors.index.json";

// Keys the released base carries that upstream's model does not have (Wan2.2's Conv3d patch
// embedding): ignored on load, never written.
bool IgnoredUpstreamKey(const std::string& key) {
  return key == "patch_embedding.weight" || key == "patch_embedding.bias";
}

}  // namespace

StDType ToStDType(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat64:
      return StDType::kF64;
    case torch::kFloat32:
      return StDType::kF32;
    case torch::kBFloat16:
      return StDType::kBF16;
    case torch::kFloat16:
      return StDType::kF16;
    case torch::kInt64:
      return StDType::kI64;
    case torch::kInt32:
      return StDType::kI32;
    default:
      break;
  }
  BATON_FAIL(kExitInternal, std::string("safetensors: unsupported dtype ") + c10::toString(t),
             "a tensor of this dtype cannot be saved; this is a bug, please report it");
}

torch::ScalarType ToTorchDtype(StDType t) {
  switch (t) {
    case StDType::kF64:
      return torch::kFloat64;
    case StDType::kF32:
      return torch::kFloat32;
    case StDType::kBF16:
      return torch::kBFloat16;
    case StDType::kF16:
      return torch::kFloat16;
    case StDType::kI64:
      return torch::kInt64;
    case StDType::kI32:
      return torch::kInt32;
    default:
      break;
  }
  BATON_FAIL(kExitInternal, std::string("safetensors: no torch dtype for ") + StDTypeName(t),
             "a safetensors file of this dtype cannot be loaded into a model");
}

torch::Dtype ExportDtype(ExportDType dtype) {
  return dtype == ExportDType::kBf16 ? torch::kBFloat16 : torch::kFloat32;
}

namespace {

// The weights of a transformer/ folder: every file opened (headers and maps, no tensor data
// read) and the file of every key, with the index and the shards agreeing both ways.
struct WeightFolder {
  std::string tdir;
  std::string where;  // the index or the single file, for messages
  bool indexed = false;
  std::map<std::string, std::string> key_file;  // key -> the path of its file
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> files;  // path -> file
  const StTensorInfo& Info(const std::string& key) const {
    return *files.at(key_file.at(key))->Find(key);
  }
};

WeightFolder OpenWeightFolder(const std::string& tdir) {
  WeightFolder w;
  w.tdir = tdir;
  const fs::path index = fs::path(tdir) / kIndexName;
  std::error_code ec;
  fs::path found_index;
  if (fs::is_regular_file(index, ec)) {
    found_index = index;
  } else {
    for (const auto& e : fs::directory_iterator(tdir, ec)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 22 && n.compare(n.size() - 23, 23, ".safetensors.index.json") == 0) {
        found_index = e.path();
        break;
      }
    }
  }
  auto open = [&](const std::string& path) {
    if (w.files.count(path)) return;
    auto r = SafetensorsFile::Open(path);
    if (!r.ok()) {
      BATON_FAIL(kExitData,
                 r.status().ToString() + (w.indexed ? " (named by " + w.where + ")" : ""),
                 "the checkpoint folder is incomplete or damaged");
    }
    w.files[path] = r.value();
  };
  if (!found_index.empty()) {
    w.indexed = true;
    w.where = found_index.string();
    for (const auto& [key, name] : ReadWeightMap(w.where)) {
      w.key_file[key] = (fs::path(tdir) / name).string();
    }
    for (const auto& [key, path] : w.key_file) open(path);
    for (const auto& [key, path] : w.key_file) {
      if (w.files[path]->Find(key) == nullptr) {
        BATON_FAIL(kExitData,
                   path + ": tensor '" + key + "' is missing (" + w.where + " puts it here)",
                   "the shards and the index disagree");
      }
    }
    // A tensor the index does not name would be silently dropped by upstream's loader too:
    // refused, so that what is trained is what the folder holds.
    for (const auto& [path, f] : w.files) {
      for (const auto& t : f->tensors()) {
        auto it = w.key_file.find(t.name);
        if (it == w.key_file.end()) {
          BATON_FAIL(kExitData, path + ": tensor '" + t.name + "' is not in " + w.where,
                     "the shards and the index disagree");
        }
        if (it->second != path) {
          BATON_FAIL(kExitData,
                     path + ": tensor '" + t.name + "' is also here, but " + w.where +
                         " puts it in " + it->second,
                     "the shards and the index disagree");
        }
      }
    }
    return w;
  }
  fs::path single = fs::path(tdir) / kSingleName;
  if (!fs::is_regular_file(single, ec)) {
    std::vector<fs::path> any;
    for (const auto& e : fs::directory_iterator(tdir, ec)) {
      if (e.path().extension() == ".safetensors") any.push_back(e.path());
    }
    if (any.size() != 1) {
      BATON_FAIL(kExitData,
                 tdir + ": no " + kSingleName + " and no *.safetensors.index.json" +
                     (any.empty() ? "" : " (and several .safetensors files)"),
                 "an upstream transformer/ folder holds one weights file or shards + an index");
    }
    single = any[0];
  }
  w.where = single.string();
  open(w.where);
  for (const auto& t : w.files[w.where]->tensors()) w.key_file[t.name] = w.where;
  return w;
}

// num_layers against the blocks the files hold (bounded by their headers).
void CheckLayers(const WeightFolder& w, const ModelDims& d, const std::string& config) {
  std::set<int64_t> blocks;
  for (const auto& [key, path] : w.key_file) {
    if (key.rfind("blocks.", 0) != 0) continue;
    const size_t dot = key.find('.', 7);
    const std::string n = key.substr(7, dot == std::string::npos ? std::string::npos : dot - 7);
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) {
      BATON_FAIL(kExitData, path + ": unexpected tensor '" + key + "'",
                 "block keys are blocks.<layer>.<name>");
    }
    blocks.insert(std::stoll(n));
  }
  if (int64_t(blocks.size()) != d.layers ||
      (!blocks.empty() && *blocks.rbegin() != int64_t(blocks.size()) - 1)) {
    BATON_FAIL(kExitData,
               config + ": num_layers " + std::to_string(d.layers) + " but " + w.where + " holds " +
                   std::to_string(blocks.size()) + " block(s)" +
                   (blocks.empty() ? std::string()
                                   : " numbered " + std::to_string(*blocks.begin()) + ".." +
                                         std::to_string(*blocks.rbegin())),
               "the weights and config.json belong to different models");
  }
}

// One size at a time against the tensor that has it, naming the config.json key (so an absurd
// size is reported as such).
void CheckSizes(const WeightFolder& w, const ModelDims& d, const std::string& config) {
  struct Size {
    const char* config_key;
    int64_t value;
    const char* tensor;
    size_t axis;
  };
  const Size sizes[] = {
      {"num_attention_heads x attention_head_dim", d.dim, "patch_embedding_mlp.weight", 0},
      {"in_channels x patch_size[1] x patch_size[2]", d.channels * d.patch * d.patch,
       "patch_embedding_mlp.weight", 1},
      {"action_dim", d.action_dim, "action_embedder.weight", 1},
      {"freq_dim", d.freq_dim, "condition_embedder.time_embedder.linear_1.weight", 1},
      {"text_dim", d.text_dim, "condition_embedder.text_embedder.linear_1.weight", 1},
      {"ffn_dim", d.ffn_dim, "blocks.0.ffn.net.0.proj.weight", 0},
  };
  for (const Size& s : sizes) {
    if (!w.key_file.count(s.tensor)) {
      BATON_FAIL(kExitData, w.where + ": tensor '" + s.tensor + "' is missing",
                 "every upstream key must be present (config.json gives the sizes)");
    }
    const StTensorInfo& t = w.Info(s.tensor);
    if (t.shape.size() != 2 || t.shape[s.axis] != s.value) {
      BATON_FAIL(kExitData,
                 config + ": " + s.config_key + " is " + std::to_string(s.value) + " but " +
                     w.key_file.at(s.tensor) + ": tensor '" + s.tensor + "' has shape " +
                     ShapeString(t.shape),
                 "the weights and config.json belong to different models");
    }
  }
}

// Every key of the model, in its shape and a float dtype, and no other.
void CheckKeys(const WeightFolder& w, const ModelDims& d) {
  const auto expected = UpstreamParameterShapes(d);
  std::set<std::string> known;
  for (const auto& e : expected) known.insert(e.first);
  for (const auto& [key, file] : w.key_file) {
    if (known.count(key) || IgnoredUpstreamKey(key)) continue;
    BATON_FAIL(kExitData, file + ": unexpected tensor '" + key + "'",
               "not a key of the model config.json describes (only patch_embedding.* is ignored)");
  }
  for (const auto& [key, want] : expected) {
    auto it = w.key_file.find(key);
    if (it == w.key_file.end()) {
      BATON_FAIL(kExitData, w.where + ": tensor '" + key + "' is missing",
                 "every upstream key must be present (config.json gives the sizes)");
    }
    const StTensorInfo& t = w.Info(key);
    if (t.shape != want) {
      BATON_FAIL(kExitData,
                 it->second + ": tensor '" + key + "' has shape " + ShapeString(t.shape) +
                     " but config.json's sizes give " + ShapeString(want),
                 "the weights and config.json belong to different models");
    }
    if (t.dtype != StDType::kF32 && t.dtype != StDType::kBF16 && t.dtype != StDType::kF16 &&
        t.dtype != StDType::kF64) {
      BATON_FAIL(
          kExitData,
          it->second + ": tensor '" + key + "' has dtype " + StDTypeName(t.dtype) + ", not a float",
          "the weights are not upstream's model; export them again as float tensors");
    }
  }
}

// config.json's sizes against the tensors' shapes, using only the headers. First one size at a
// time, naming the config.json key (so an absurd size is reported as such), then every key of
// the model; afterwards the model these sizes build is no larger than the tensors the files hold.
void CheckShapes(const WeightFolder& w, const ModelDims& d) {
  const std::string config = (fs::path(w.tdir) / kUpstreamConfigName).string();
  CheckLayers(w, d, config);
  CheckSizes(w, d, config);
  CheckKeys(w, d);
}

}  // namespace

void CheckTransformerWeights(const std::string& tdir, const ModelDims& dims) {
  CheckShapes(OpenWeightFolder(tdir), dims);
}

int64_t LoadTransformerWeights(const std::string& tdir, VideoActionModel& model) {
  const WeightFolder w = OpenWeightFolder(tdir);
  CheckShapes(w, model->dims());
  torch::NoGradGuard no_grad;
  const auto expected = UpstreamParameterShapes(model->dims());
  const auto params = model->named_parameters();
  if (expected.size() != params.size()) {
    BATON_FAIL(kExitInternal,
               "the model has " + std::to_string(params.size()) + " parameters but " +
                   std::to_string(expected.size()) + " upstream keys",
               "UpstreamParameterShapes and VideoActionModel disagree");
  }
  int64_t bytes = 0;
  for (auto& p : model->named_parameters()) {
    const std::string& key = p.key();
    auto it = w.key_file.find(key);
    const std::vector<int64_t> want = p.value().sizes().vec();
    if (it == w.key_file.end() || w.Info(key).shape != want) {
      BATON_FAIL(
          kExitInternal,
          "parameter '" + key + "' " + ShapeString(want) + " is not an upstream key of that shape",
          "UpstreamParameterShapes and VideoActionModel disagree");
    }
    const SafetensorsFile& f = *w.files.at(it->second);
    const StTensorInfo& t = w.Info(key);
    auto src = torch::from_blob(const_cast<uint8_t*>(f.Data(t)), t.shape, ToTorchDtype(t.dtype));
    p.value().copy_(src.to(p.value().scalar_type()));
    // Checked in the model's dtype: a float64 value beyond float32's range is as bad as an Inf.
    if (!torch::isfinite(p.value()).all().item<bool>()) {
      const int64_t bad = (~torch::isfinite(p.value())).sum().item<int64_t>();
      BATON_FAIL(kExitData,
                 f.path() + ": tensor '" + key + "' holds " + std::to_string(bad) +
                     " NaN/Inf value(s)" +
                     (t.dtype == StDType::kF64 && p.value().scalar_type() != torch::kFloat64
                          ? " (in " + std::string(c10::toString(p.value().scalar_type())) + ")"
                          : ""),
                 "the checkpoint is damaged or diverged; start from another one");
    }
    bytes += int64_t(t.end - t.begin);
  }
  return bytes;
}

std::vector<std::string> WriteTransformerFolder(const std::string& tdir, VideoActionModel& model,
                                                torch::Dtype dtype, int64_t max_shard_bytes,
                                                const std::string& relative_to) {
  std::error_code ec;
  fs::create_directories(tdir, ec);
  if (ec)
    BATON_FAIL(kExitIo, tdir + ": cannot create: " + ec.message(),
               "check disk space and permissions");
  auto rel = [&](const std::string& name) {
    return fs::path(fs::path(tdir) / name).lexically_relative(relative_to).string();
  };
  std::vector<std::string> written;
  BATON_CHECK_OK(WriteTextAtomic((fs::path(tdir) / kUpstreamConfigName).string(),
                                 UpstreamConfigJson(model->dims()).dump(2) + "\n"),
                 "check disk space");
  written.push_back(rel(kUpstreamConfigName));

  // diffusers' split: tensors in order, a new shard when the next one would pass the limit (a
  // tensor larger than the limit gets a shard of its own).
  struct Item {
    std::string name;
    torch::Tensor param;
    int64_t bytes;
  };
  std::vector<std::vector<Item>> shards(1);
  int64_t current = 0, total = 0;
  const int64_t elem = int64_t(c10::elementSize(dtype));
  for (const auto& p : model->named_parameters()) {
    const int64_t b = p.value().numel() * elem;
    if (!shards.back().empty() && current + b > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back({p.key(), p.value(), b});
    current += b;
    total += b;
  }
  const size_t n = shards.size();
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < n; ++i) {
    char name[96];
    if (n == 1) {
      std::snprintf(name, sizeof name, "%s", kSingleName);
    } else {
      std::snprintf(name, sizeof name, "diffusion_pytorch_model-%05zu-of-%05zu.safetensors", i + 1,
                    n);
    }
    std::vector<torch::Tensor> keep;
    std::vector<StTensorRef> refs;
    for (const auto& it : shards[i]) {
      keep.push_back(it.param.detach().to(torch::kCPU).to(dtype).contiguous());
      refs.push_back(
          {it.name, ToStDType(dtype), keep.back().sizes().vec(), keep.back().data_ptr()});
      weight_map[it.name] = name;
    }
    BATON_CHECK_OK(WriteSafetensors((fs::path(tdir) / name).string(), refs, {{"format", "pt"}}),
                   "check disk space");
    written.push_back(rel(name));
  }
  if (n > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    BATON_CHECK_OK(WriteTextAtomic((fs::path(tdir) / kIndexName).string(), index.dump(2) + "\n"),
                   "check disk space");
    written.push_back(rel(kIndexName));
  }
  return written;
}

}  // namespace baton
