// libFuzzer target: the torch.save reader of upstream's `.pth` latents and empty_emb.pt
// (trainer/lerobot/pickle_scan.h) on arbitrary bytes: the zip directory, then the pickle against
// its storages. A scan that succeeds must hand out tensors that lie inside their storages.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trainer/lerobot/pickle_scan.h"

namespace {

void CheckTensors(const baton::PickleValue& v, const baton::TorchSave& save, int depth) {
  if (depth > baton::kPickleMaxDepth + 2) __builtin_trap();  // the scan bounds nesting
  if (v.kind == baton::PickleValue::Kind::kTensor) {
    const auto it = save.storages.find(v.tensor.storage);
    if (it == save.storages.end()) __builtin_trap();
    const baton::PickleTensor& t = v.tensor;
    if (t.numel > 0) {
      // The last element it reaches, in bytes, lies inside its storage's member.
      if (t.element_size <= 0 || t.offset < 0 || t.sizes.size() != t.strides.size()) {
        __builtin_trap();
      }
      __int128 last = t.offset;
      for (size_t d = 0; d < t.sizes.size(); ++d) {
        if (t.sizes[d] <= 0 || t.strides[d] < 0) __builtin_trap();
        last += __int128(t.sizes[d] - 1) * t.strides[d];
      }
      if ((last + 1) * t.element_size > __int128(it->second.size)) __builtin_trap();
    }
  }
  for (const auto& item : v.items) {
    if (item) CheckTensors(*item, save, depth + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton::TorchSave save;
  const baton::Status st =
      baton::ScanTorchSave(std::string_view(reinterpret_cast<const char*>(data), size), &save);
  if (st.ok()) {
    if (!save.root) __builtin_trap();
    CheckTensors(*save.root, save, 0);
  } else if (st.code() != baton::Code::kData) {
    __builtin_trap();  // every refusal is the reader's named data error
  }
  return 0;
}
