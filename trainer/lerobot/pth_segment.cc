#include "trainer/lerobot/pth_segment.h"

#include <torch/torch.h>

#include <fstream>
#include <iterator>

namespace baton {
namespace {

Result<torch::IValue> LoadPickle(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return Status::Data(path + ": cannot open");
  // One read of the whole file: a per-character stream iterator made this the import's cost.
  std::vector<char> data(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(data.data(), std::streamsize(data.size())))
    return Status::Data(path + ": cannot read");
  try {
    return torch::pickle_load(data);
  } catch (const c10::Error& e) {
    return Status::Data(path + ": not a readable torch.save file: " +
                        std::string(e.what_without_backtrace()).substr(0, 300));
  } catch (const std::exception& e) {
    return Status::Data(path + ": not a readable torch.save file: " + e.what());
  }
}

Result<RawTensor> ToRaw(const std::string& where, const torch::Tensor& t0) {
  RawTensor r;
  switch (t0.scalar_type()) {
    case torch::kBFloat16:
      r.dtype = StDType::kBF16;
      break;
    case torch::kFloat:
      r.dtype = StDType::kF32;
      break;
    case torch::kHalf:
      r.dtype = StDType::kF16;
      break;
    default:
      return Status::Data(where + ": dtype " + std::string(c10::toString(t0.scalar_type())) +
                          " (expected bfloat16, float16 or float32)");
  }
  const torch::Tensor t = t0.contiguous().cpu();
  r.shape.assign(t.sizes().begin(), t.sizes().end());
  r.bytes.assign(static_cast<const char*>(t.data_ptr()), size_t(t.numel()) * t.element_size());
  return r;
}

}  // namespace

int64_t RawTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<PthSegment> ReadPthSegment(const std::string& path, bool with_text) {
  auto loaded = LoadPickle(path);
  if (!loaded.ok()) return loaded.status();
  const torch::IValue& v = loaded.value();
  if (!v.isGenericDict()) return Status::Data(path + ": expected a dict (upstream's latent file)");
  const auto dict = v.toGenericDict();
  auto get = [&](const char* key) -> const torch::IValue* {
    for (const auto& kv : dict) {
      if (kv.key().isString() && kv.key().toStringRef() == key) return &kv.value();
    }
    return nullptr;
  };
  auto bad = [&](const std::string& key, const std::string& why) {
    return Status::Data(path + ": key '" + key + "': " + why);
  };
  PthSegment s;
  const torch::IValue* lat = get("latent");
  if (!lat || !lat->isTensor()) return bad("latent", "missing or not a tensor");
  auto raw = ToRaw(path + ": key 'latent'", lat->toTensor());
  if (!raw.ok()) return raw.status();
  s.latent = std::move(raw).value();
  if (s.latent.shape.size() != 2) return bad("latent", "expected [F*h*w, C]");
  for (auto [key, out] :
       {std::pair<const char*, int64_t*>{"latent_num_frames", &s.latent_num_frames},
        {"latent_height", &s.latent_height},
        {"latent_width", &s.latent_width}}) {
    const torch::IValue* x = get(key);
    if (!x || !x->isInt()) return bad(key, "missing or not an integer");
    *out = x->toInt();
  }
  if (!with_text) return s;
  const torch::IValue* text = get("text_emb");
  if (!text || !text->isTensor()) return bad("text_emb", "missing or not a tensor");
  auto t = ToRaw(path + ": key 'text_emb'", text->toTensor());
  if (!t.ok()) return t.status();
  s.text_emb = std::move(t).value();
  s.has_text = true;
  const torch::IValue* ids = get("frame_ids");
  if (!ids) return bad("frame_ids", "missing");
  if (ids->isTensor()) {
    const torch::Tensor ft = ids->toTensor();
    if (ft.dim() != 1 || ft.is_floating_point())
      return bad("frame_ids", "expected a 1-d integer tensor");
    const torch::Tensor l = ft.to(torch::kLong).contiguous();
    s.frame_ids.assign(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel());
  } else if (ids->isList()) {
    for (const auto& e : ids->toList()) {
      const torch::IValue x = e;
      if (!x.isInt()) return bad("frame_ids", "a list holding a non-integer");
      s.frame_ids.push_back(x.toInt());
    }
  } else {
    return bad("frame_ids", "neither a list nor a tensor (" + ids->tagKind() + ")");
  }
  return s;
}

Result<RawTensor> ReadPthTensor(const std::string& path) {
  auto loaded = LoadPickle(path);
  if (!loaded.ok()) return loaded.status();
  const torch::IValue& v = loaded.value();
  if (v.isTensor()) return ToRaw(path, v.toTensor());
  if (v.isGenericDict() && v.toGenericDict().size() == 1 &&
      v.toGenericDict().begin()->value().isTensor()) {
    return ToRaw(path, v.toGenericDict().begin()->value().toTensor());
  }
  return Status::Data(path + ": expected a tensor");
}

}  // namespace baton
