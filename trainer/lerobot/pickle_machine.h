// The pickle machine under ScanPickle (pickle_scan.h): the stack, the marks and the memo, and the
// bounds checked at every opcode. Its methods are split by what they build: the opcode dispatch
// and the containers (pickle_scan.cc), and the torch values, storages and tensors
// (pickle_torch_values.cc). Internal to trainer/lerobot/; one Scanner per pickle, single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainer/lerobot/pickle_scan.h"

namespace baton::pickle {

using Kind = PickleValue::Kind;
using Ptr = std::shared_ptr<PickleValue>;

// The storage classes torch.save names ("Float", "BFloat16", ...) with their element sizes; 0
// for any other name.
int64_t StorageElementSize(const std::string& cls);
// Names of the opcodes a refusal may meet, for its message.
const char* OpName(uint8_t op);
// "a dict", "an int", ...: a value's kind, for messages.
const char* KindName(Kind k);

inline bool IsContainer(const PickleValue& v) {
  return v.kind == Kind::kTuple || v.kind == Kind::kList || v.kind == Kind::kDict;
}
inline bool MulOk(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool AddOk(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

class Scanner {
 public:
  Scanner(std::string_view p, const std::function<int64_t(const std::string&)>& storage_bytes)
      : p_(p), storage_bytes_(storage_bytes) {}

  Status Run(std::shared_ptr<const PickleValue>* root);

 private:
  Status Err(const std::string& why) const {
    return Status::Data("pickle byte " + std::to_string(op_at_) + ": " + why);
  }
  size_t Fence() const { return marks_.empty() ? 0 : marks_.back(); }
  // Values above the innermost mark: what an opcode may pop.
  size_t Above() const { return stack_.size() - Fence(); }

  Status Need(size_t n, const char* op) const {
    if (Above() < n) {
      return Err(std::string(op) + " needs " + std::to_string(n) + " value(s) on the stack, " +
                 std::to_string(Above()) + " there");
    }
    return Status::Ok();
  }
  Status Bytes(size_t n, const char* op) const {
    if (p_.size() - pos_ < n) return Err(std::string(op) + ": the pickle ends inside its argument");
    return Status::Ok();
  }
  uint64_t Le(int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | uint8_t(p_[pos_ + size_t(k)]);
    pos_ += size_t(n);
    return v;
  }
  Ptr Pop() {
    Ptr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Ptr Make(Kind k) {
    auto v = std::make_shared<PickleValue>();
    v->kind = k;
    return v;
  }
  void PushInt(int64_t i) {
    Ptr v = Make(Kind::kInt);
    v->i = i;
    stack_.push_back(std::move(v));
  }

  // Containers (pickle_scan.cc).
  // `item` goes inside `into`: it is sealed, and `into` grows by its depth.
  Status Seal(PickleValue& into, const Ptr& item);
  Status Insert(PickleValue& into, const Ptr& item);
  Status MakeTuple(size_t n);
  Status SetItems(PickleValue& dict, size_t from);
  Status Appends(PickleValue& list, size_t from);
  Status Memo(uint64_t idx);
  Status Get(uint64_t idx);

  // The opcode dispatch (pickle_scan.cc): Step sends each opcode to its group's handler.
  Status Step(uint8_t op, bool* stop);
  Status Refuse(uint8_t op) const;  // an opcode torch.save does not write for tensors
  Status StackOp(uint8_t op);       // MARK, POP
  Status ConstOp(uint8_t op);       // NONE, NEWTRUE, NEWFALSE
  Status IntOp(uint8_t op);         // BININT1, BININT2, BININT, LONG1
  Status BinFloat();
  Status BinUnicode();
  Status BuildOp(uint8_t op);  // EMPTY_LIST, EMPTY_DICT, EMPTY_TUPLE, TUPLE1..3, TUPLE
  Status FillOp(uint8_t op);   // APPEND, APPENDS, SETITEM, SETITEMS
  Status MemoOp(uint8_t op);   // BINPUT, LONG_BINPUT, BINGET, LONG_BINGET

  // Torch values (pickle_torch_values.cc).
  Status PersistentId();
  static bool IntTuple(const PickleValue& v, std::vector<int64_t>* out);
  Status RebuildTensor(const PickleValue& args);
  static std::string Shape(const std::vector<int64_t>& v);
  Status Reduce();
  Status Global();

  std::string_view p_;
  const std::function<int64_t(const std::string&)>& storage_bytes_;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Ptr> memo_;
  int64_t tensors_ = 0;
};

}  // namespace baton::pickle
