// PickleScan: a bounded reader of the one pickle structure torch.save writes for upstream's
// latent files and empty_emb.pt — dicts, lists and tuples of ints, floats, strings, bools and
// tensors (`torch._utils._rebuild_tensor_v2` over a persistent storage) — and nothing else. It
// replaces a general unpickler, which trusts its input: every opcode is checked against the stack
// it pops, the marks and the memo; stack depth, marks, memo indices, nesting and the opcode count
// are bounded; every tensor's extent is checked against its storage, and every storage against
// the bytes of its zip member, before any value is handed out. Torch-free and pure (it reads the
// given bytes only), so it can be fuzzed on its own: ScanTorchSave(bytes) is the entry point.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schema/status.h"
#include "trainer/lerobot/stored_zip.h"

namespace baton {

// Bounds of the scan. Upstream's files are a dict of about a dozen keys and a few tensors.
inline constexpr uint64_t kPickleMaxBytes = 16ull << 20;
inline constexpr int64_t kPickleMaxOps = 1 << 18;
inline constexpr size_t kPickleMaxStack = 4096;  // Python batches APPENDS/SETITEMS by 1000
inline constexpr size_t kPickleMaxMarks = 64;
inline constexpr int kPickleMaxDepth = 16;  // containers inside containers
inline constexpr uint32_t kPickleMaxMemo = 1 << 16;
inline constexpr int64_t kPickleMaxTensors = 256;
inline constexpr size_t kPickleMaxDims = 16;

struct PickleTensor {
  std::string storage;       // its storage's key: the zip member "<archive>/data/<key>"
  std::string dtype;         // the storage class without "Storage": "BFloat16", "Float", "Long"
  int64_t element_size = 0;  // bytes
  int64_t offset = 0;        // in elements, into the storage
  std::vector<int64_t> sizes, strides;
  int64_t numel = 0;
};

struct PickleValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kTensor,
    kGlobal,
    kStorage
  };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;  // kInt; kStorage: its element count
  double f = 0;
  std::string s;                                    // kString; kGlobal: "module name"
  std::vector<std::shared_ptr<PickleValue>> items;  // kTuple, kList; kDict: key, value, key, ...
  PickleTensor tensor;                              // kTensor; kStorage: storage, dtype, size
  int depth = 0;                                    // containers nested inside, this one included
  bool sealed = false;  // inside another container: never changed again (no cycles)

  // kDict: the value of a string key, or nullptr.
  const PickleValue* Get(const std::string& key) const;
};

struct TorchSave {
  std::shared_ptr<const PickleValue> root;
  std::map<std::string, ZipMember> storages;  // by storage key: each tensor's bytes
};

// The pickle alone. `storage_bytes(key)` is the byte size of storage `key`'s data, or -1 when
// there is none. Code::kData saying what and at which byte; the message names no file.
Status ScanPickle(std::string_view pickle,
                  const std::function<int64_t(const std::string& key)>& storage_bytes,
                  std::shared_ptr<const PickleValue>* root);

// A whole torch.save file (zip format): its directory, then its pickle against its storages.
// *out, when given, receives the value and where each storage's bytes lie in `file`.
Status ScanTorchSave(std::string_view file, TorchSave* out = nullptr);

}  // namespace baton
