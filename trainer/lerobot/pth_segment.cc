#include "trainer/lerobot/pth_segment.h"

#include <cstring>

#include "schema/input_file.h"
#include "trainer/lerobot/pickle_scan.h"

namespace baton {
namespace {

// A latent file is a zip without zip64 records: under 4 GiB.
constexpr uint64_t kMaxPthBytes = 4ull << 30;

struct Loaded {
  std::string bytes;
  TorchSave save;
};

Result<Loaded> Load(const std::string& path) {
  Loaded l;
  auto bytes = ReadRegularFile(path, kMaxPthBytes);
  if (!bytes.ok()) return bytes.status();
  l.bytes = std::move(bytes).value();
  const Status st = ScanTorchSave(l.bytes, &l.save);
  if (!st.ok()) return Status::Data(path + ": not a readable torch.save file: " + st.message());
  return l;
}

// The view's elements in row-major order, gathered from its storage. The scan checked that the
// view lies inside the storage and the storage inside the file.
std::string Gather(const Loaded& l, const PickleTensor& t) {
  const ZipMember& m = l.save.storages.at(t.storage);
  const char* base = l.bytes.data() + m.offset;
  const size_t es = size_t(t.element_size);
  std::string out(size_t(t.numel) * es, '\0');
  if (t.numel == 0) return out;
  bool contiguous = true;
  int64_t expect = 1;
  for (size_t d = t.sizes.size(); d-- > 0;) {
    if (t.sizes[d] != 1 && t.strides[d] != expect) contiguous = false;
    expect *= t.sizes[d];
  }
  if (contiguous) {
    std::memcpy(&out[0], base + size_t(t.offset) * es, out.size());
    return out;
  }
  std::vector<int64_t> idx(t.sizes.size(), 0);
  for (int64_t k = 0; k < t.numel; ++k) {
    int64_t at = t.offset;
    for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * t.strides[d];
    std::memcpy(&out[size_t(k) * es], base + size_t(at) * es, es);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < t.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Result<RawTensor> ToRaw(const std::string& where, const Loaded& l, const PickleTensor& t) {
  RawTensor r;
  if (t.dtype == "BFloat16") {
    r.dtype = StDType::kBF16;
  } else if (t.dtype == "Float") {
    r.dtype = StDType::kF32;
  } else if (t.dtype == "Half") {
    r.dtype = StDType::kF16;
  } else {
    return Status::Data(where + ": dtype " + t.dtype + " (expected bfloat16, float16 or float32)");
  }
  r.shape = t.sizes;
  r.bytes = Gather(l, t);
  return r;
}

// An integer tensor's values as int64 (little-endian, as the scan checked).
Result<std::vector<int64_t>> IntValues(const std::string& where, const Loaded& l,
                                       const PickleTensor& t) {
  const bool is_signed = t.dtype != "Byte";
  if (t.dtype != "Long" && t.dtype != "Int" && t.dtype != "Short" && t.dtype != "Char" &&
      t.dtype != "Byte") {
    return Status::Data(where + ": a " + t.dtype + " tensor, expected an integer one");
  }
  const std::string b = Gather(l, t);
  const size_t es = size_t(t.element_size);
  std::vector<int64_t> v(size_t(t.numel));
  for (size_t k = 0; k < v.size(); ++k) {
    uint64_t x = 0;
    for (size_t j = es; j-- > 0;) x = (x << 8) | uint8_t(b[k * es + j]);
    if (is_signed && es < 8 && ((x >> (8 * es - 1)) & 1)) x |= ~uint64_t(0) << (8 * es);
    v[k] = int64_t(x);
  }
  return v;
}

}  // namespace

int64_t RawTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t CountNonFinite(const RawTensor& t) {
  const size_t es = StDTypeSize(t.dtype);
  int64_t bad = 0;
  for (size_t k = 0; k + es <= t.bytes.size(); k += es) {
    uint32_t u = 0;
    std::memcpy(&u, t.bytes.data() + k, es);  // little-endian host
    switch (t.dtype) {
      case StDType::kBF16:
        bad += (u & 0x7F80u) == 0x7F80u;
        break;
      case StDType::kF16:
        bad += (u & 0x7C00u) == 0x7C00u;
        break;
      case StDType::kF32:
        bad += (u & 0x7F800000u) == 0x7F800000u;
        break;
      default:
        break;
    }
  }
  return bad;
}

Result<PthSegment> ReadPthSegment(const std::string& path, bool with_text) {
  auto loaded = Load(path);
  if (!loaded.ok()) return loaded.status();
  const Loaded& l = loaded.value();
  const PickleValue& v = *l.save.root;
  using Kind = PickleValue::Kind;
  if (v.kind != Kind::kDict)
    return Status::Data(path + ": expected a dict (upstream's latent file)");
  auto bad = [&](const std::string& key, const std::string& why) {
    return Status::Data(path + ": key '" + key + "': " + why);
  };
  PthSegment s;
  const PickleValue* lat = v.Get("latent");
  if (!lat || lat->kind != Kind::kTensor) return bad("latent", "missing or not a tensor");
  auto raw = ToRaw(path + ": key 'latent'", l, lat->tensor);
  if (!raw.ok()) return raw.status();
  s.latent = std::move(raw).value();
  if (s.latent.shape.size() != 2 || s.latent.shape[1] < 1) {
    return bad("latent", "shape " + ShapeString(s.latent.shape) + ", expected [F*h*w, C]");
  }
  for (auto [key, out] :
       {std::pair<const char*, int64_t*>{"latent_num_frames", &s.latent_num_frames},
        {"latent_height", &s.latent_height},
        {"latent_width", &s.latent_width}}) {
    const PickleValue* x = v.Get(key);
    if (!x || x->kind != Kind::kInt) return bad(key, "missing or not an integer");
    if (x->i < 1) return bad(key, std::to_string(x->i) + " (a latent size is >= 1)");
    *out = x->i;
  }
  // F*h*w rows: the sizes must multiply to the rows that are there, without overflow.
  int64_t fh = 0, fhw = 0;
  if (__builtin_mul_overflow(s.latent_num_frames, s.latent_height, &fh) ||
      __builtin_mul_overflow(fh, s.latent_width, &fhw) || fhw != s.latent.shape[0]) {
    return bad("latent",
               "shape " + ShapeString(s.latent.shape) +
                   " is not [F*h*w, C] for F*h*w = " + std::to_string(s.latent_num_frames) + "*" +
                   std::to_string(s.latent_height) + "*" + std::to_string(s.latent_width));
  }
  if (!with_text) return s;
  const PickleValue* text = v.Get("text_emb");
  if (!text || text->kind != Kind::kTensor) return bad("text_emb", "missing or not a tensor");
  auto t = ToRaw(path + ": key 'text_emb'", l, text->tensor);
  if (!t.ok()) return t.status();
  s.text_emb = std::move(t).value();
  s.has_text = true;
  const PickleValue* ids = v.Get("frame_ids");
  if (!ids) return bad("frame_ids", "missing");
  if (ids->kind == Kind::kTensor) {
    if (ids->tensor.sizes.size() != 1) return bad("frame_ids", "expected a 1-d integer tensor");
    auto f = IntValues(path + ": key 'frame_ids'", l, ids->tensor);
    if (!f.ok()) return f.status();
    s.frame_ids = std::move(f).value();
  } else if (ids->kind == Kind::kList) {
    for (const auto& e : ids->items) {
      if (e->kind != Kind::kInt) return bad("frame_ids", "a list holding a non-integer");
      s.frame_ids.push_back(e->i);
    }
  } else {
    return bad("frame_ids", "neither a list nor a tensor");
  }
  return s;
}

Result<RawTensor> ReadPthTensor(const std::string& path) {
  auto loaded = Load(path);
  if (!loaded.ok()) return loaded.status();
  const Loaded& l = loaded.value();
  const PickleValue& v = *l.save.root;
  using Kind = PickleValue::Kind;
  if (v.kind == Kind::kTensor) return ToRaw(path, l, v.tensor);
  if (v.kind == Kind::kDict && v.items.size() == 2 && v.items[1]->kind == Kind::kTensor) {
    return ToRaw(path, l, v.items[1]->tensor);
  }
  return Status::Data(path + ": expected a tensor");
}

}  // namespace baton
