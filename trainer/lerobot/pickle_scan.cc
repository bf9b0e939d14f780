#include "trainer/lerobot/pickle_scan.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace baton {
namespace {

using Kind = PickleValue::Kind;
using Ptr = std::shared_ptr<PickleValue>;

// The storage classes torch.save names, with their element sizes.
int64_t StorageElementSize(const std::string& cls) {
  static const std::map<std::string, int64_t> kSizes = {
      {"BFloat16", 2}, {"Half", 2},  {"Float", 4}, {"Double", 8}, {"Long", 8},
      {"Int", 4},      {"Short", 2}, {"Char", 1},  {"Byte", 1},   {"Bool", 1}};
  auto it = kSizes.find(cls);
  return it == kSizes.end() ? 0 : it->second;
}

// Names of the opcodes a refusal may meet, for its message.
const char* OpName(uint8_t op) {
  switch (op) {
    case 'b':
      return "BUILD";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 'P':
      return "PERSID";
    case 'g':
      return "GET";
    case 'p':
      return "PUT";
    case 'I':
      return "INT";
    case 'L':
      return "LONG";
    case 'F':
      return "FLOAT";
    case 'S':
      return "STRING";
    case 'V':
      return "UNICODE";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case '2':
      return "DUP";
    case '1':
      return "POP_MARK";
    case 'd':
      return "DICT";
    case 'l':
      return "LIST";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x8b:
      return "LONG4";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    default:
      return "unknown";
  }
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "a bool";
    case Kind::kInt:
      return "an int";
    case Kind::kFloat:
      return "a float";
    case Kind::kString:
      return "a string";
    case Kind::kTuple:
      return "a tuple";
    case Kind::kList:
      return "a list";
    case Kind::kDict:
      return "a dict";
    case Kind::kTensor:
      return "a tensor";
    case Kind::kGlobal:
      return "a global";
    case Kind::kStorage:
      return "a storage";
  }
  return "?";
}

bool IsContainer(const PickleValue& v) {
  return v.kind == Kind::kTuple || v.kind == Kind::kList || v.kind == Kind::kDict;
}

bool MulOk(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool AddOk(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

class Scanner {
 public:
  Scanner(std::string_view p, const std::function<int64_t(const std::string&)>& storage_bytes)
      : p_(p), storage_bytes_(storage_bytes) {}

  Status Run(std::shared_ptr<const PickleValue>* root) {
    if (p_.size() > kPickleMaxBytes) {
      return Status::Data("pickle of " + std::to_string(p_.size()) + " bytes (at most " +
                          std::to_string(kPickleMaxBytes) + ")");
    }
    if (p_.size() < 2 || uint8_t(p_[0]) != 0x80) {
      return Status::Data("pickle does not start with PROTO (not a torch.save pickle)");
    }
    if (uint8_t(p_[1]) != 2) {
      return Status::Data("pickle protocol " + std::to_string(uint8_t(p_[1])) +
                          " (torch.save writes protocol 2)");
    }
    pos_ = 2;
    for (int64_t ops = 0;; ++ops) {
      if (ops >= kPickleMaxOps)
        return Err("more than " + std::to_string(kPickleMaxOps) + " opcodes");
      if (pos_ >= p_.size()) return Status::Data("pickle ends without STOP (truncated)");
      op_at_ = pos_;
      const uint8_t op = uint8_t(p_[pos_++]);
      bool stop = false;
      Status st = Step(op, &stop);
      if (!st.ok()) return st;
      if (stack_.size() > kPickleMaxStack) {
        return Err("stack deeper than " + std::to_string(kPickleMaxStack));
      }
      if (stop) break;
    }
    if (!marks_.empty() || stack_.size() != 1) {
      return Err("STOP with " + std::to_string(stack_.size()) + " values and " +
                 std::to_string(marks_.size()) + " marks on the stack (one value expected)");
    }
    *root = stack_.back();
    return Status::Ok();
  }

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
  // `item` goes inside `into`: it is sealed, and `into` grows by its depth.
  Status Seal(PickleValue& into, const Ptr& item) {
    if (IsContainer(*item)) item->sealed = true;  // first: a container put into itself is caught
    if (into.sealed) {
      return Err(std::string("changes ") + KindName(into.kind) +
                 " that is already inside another container (a cycle or a shared container)");
    }
    const int depth = IsContainer(*item) ? item->depth + 1 : 1;
    if (depth > into.depth) into.depth = depth;
    if (into.depth > kPickleMaxDepth) {
      return Err("containers nested deeper than " + std::to_string(kPickleMaxDepth));
    }
    return Status::Ok();
  }
  Status Insert(PickleValue& into, const Ptr& item) {
    BATON_RETURN_IF_ERROR(Seal(into, item));
    into.items.push_back(item);
    return Status::Ok();
  }
  Status MakeTuple(size_t n) {
    Ptr t = Make(Kind::kTuple);
    t->depth = 1;
    const size_t from = stack_.size() - n;
    for (size_t k = from; k < stack_.size(); ++k) BATON_RETURN_IF_ERROR(Insert(*t, stack_[k]));
    stack_.resize(from);
    stack_.push_back(std::move(t));
    return Status::Ok();
  }
  Status SetItems(PickleValue& dict, size_t from) {
    if (dict.kind != Kind::kDict) {
      return Err(std::string("SETITEM(S) on ") + KindName(dict.kind) + ", not a dict");
    }
    if ((stack_.size() - from) % 2 != 0) return Err("SETITEMS with an odd number of values");
    for (size_t k = from; k < stack_.size(); k += 2) {
      const Ptr& key = stack_[k];
      if (key->kind != Kind::kString && key->kind != Kind::kInt) {
        return Err(std::string("a dict key that is ") + KindName(key->kind));
      }
      Ptr* slot = nullptr;
      for (size_t e = 0; e + 1 < dict.items.size() && !slot; e += 2) {
        const PickleValue& old = *dict.items[e];
        if (old.kind == key->kind && old.s == key->s && old.i == key->i) slot = &dict.items[e + 1];
      }
      if (slot) {  // a repeated key: the last value wins, as in Python
        BATON_RETURN_IF_ERROR(Seal(dict, stack_[k + 1]));
        *slot = stack_[k + 1];
        continue;
      }
      BATON_RETURN_IF_ERROR(Insert(dict, key));
      BATON_RETURN_IF_ERROR(Insert(dict, stack_[k + 1]));
    }
    stack_.resize(from);
    return Status::Ok();
  }
  Status Appends(PickleValue& list, size_t from) {
    if (list.kind != Kind::kList) {
      return Err(std::string("APPEND(S) on ") + KindName(list.kind) + ", not a list");
    }
    for (size_t k = from; k < stack_.size(); ++k) BATON_RETURN_IF_ERROR(Insert(list, stack_[k]));
    stack_.resize(from);
    return Status::Ok();
  }
  Status Memo(uint64_t idx) {
    if (idx >= kPickleMaxMemo) {
      return Err("memo index " + std::to_string(idx) + " (at most " +
                 std::to_string(kPickleMaxMemo - 1) + ")");
    }
    if (stack_.empty() || Above() == 0) return Err("PUT with nothing on the stack");
    memo_[uint32_t(idx)] = stack_.back();
    return Status::Ok();
  }
  Status Get(uint64_t idx) {
    auto it = memo_.find(uint32_t(idx));
    if (idx >= kPickleMaxMemo || it == memo_.end()) {
      return Err("GET of memo index " + std::to_string(idx) + ", never PUT");
    }
    stack_.push_back(it->second);
    return Status::Ok();
  }

  Status PersistentId() {
    BATON_RETURN_IF_ERROR(Need(1, "BINPERSID"));
    const Ptr id = Pop();
    const auto& e = id->items;
    if (id->kind != Kind::kTuple || e.size() != 5 || e[0]->kind != Kind::kString ||
        e[0]->s != "storage" || e[1]->kind != Kind::kGlobal || e[2]->kind != Kind::kString ||
        e[3]->kind != Kind::kString || e[4]->kind != Kind::kInt) {
      return Err("BINPERSID: not ('storage', <class>, key, location, numel)");
    }
    const std::string& cls = e[1]->s;
    const int64_t es = cls.rfind("torch ", 0) == 0 && cls.size() > 13 &&
                               cls.compare(cls.size() - 7, 7, "Storage") == 0
                           ? StorageElementSize(cls.substr(6, cls.size() - 13))
                           : 0;
    if (es == 0) return Err("BINPERSID: '" + cls + "' is not a storage class");
    const std::string& key = e[2]->s;
    if (key.empty() || key.size() > 64 ||
        key.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") !=
            std::string::npos) {
      return Err("BINPERSID: storage key '" + key.substr(0, 64) + "' is not a plain name");
    }
    const int64_t numel = e[4]->i;
    int64_t bytes = 0;
    if (numel < 0 || !MulOk(numel, es, &bytes)) {
      return Err("storage '" + key + "' of " + std::to_string(numel) + " elements");
    }
    const int64_t have = storage_bytes_(key);
    if (have < 0 && numel > 0) return Err("storage '" + key + "' has no data/" + key + " member");
    if (have >= 0 && have != bytes) {
      return Err("storage '" + key + "' claims " + std::to_string(numel) + " elements of " +
                 std::to_string(es) + " bytes, its data holds " + std::to_string(have) + " bytes");
    }
    Ptr s = Make(Kind::kStorage);
    s->i = numel;
    s->tensor.storage = key;
    s->tensor.dtype = cls.substr(6, cls.size() - 13);
    s->tensor.element_size = es;
    stack_.push_back(std::move(s));
    return Status::Ok();
  }

  static bool IntTuple(const PickleValue& v, std::vector<int64_t>* out) {
    if (v.kind != Kind::kTuple) return false;
    for (const auto& x : v.items) {
      if (x->kind != Kind::kInt) return false;
      out->push_back(x->i);
    }
    return true;
  }

  Status RebuildTensor(const PickleValue& args) {
    const auto& a = args.items;
    if (a.size() != 6 && a.size() != 7) {
      return Err("_rebuild_tensor_v2 with " + std::to_string(a.size()) + " arguments (6 or 7)");
    }
    PickleTensor t;
    if (a[0]->kind != Kind::kStorage) return Err("_rebuild_tensor_v2: argument 1 is not a storage");
    t = a[0]->tensor;
    const int64_t storage_numel = a[0]->i;
    if (a[1]->kind != Kind::kInt || a[1]->i < 0) {
      return Err("_rebuild_tensor_v2: the storage offset is not an int >= 0");
    }
    t.offset = a[1]->i;
    if (!IntTuple(*a[2], &t.sizes) || !IntTuple(*a[3], &t.strides) ||
        t.sizes.size() != t.strides.size() || t.sizes.size() > kPickleMaxDims) {
      return Err("_rebuild_tensor_v2: sizes and strides are not two int tuples of one length <= " +
                 std::to_string(kPickleMaxDims));
    }
    if (a[4]->kind != Kind::kBool) return Err("_rebuild_tensor_v2: requires_grad is not a bool");
    for (size_t k = 5; k < a.size(); ++k) {
      if (a[k]->kind != Kind::kDict && a[k]->kind != Kind::kNone) {
        return Err("_rebuild_tensor_v2: argument " + std::to_string(k + 1) + " is not a dict");
      }
    }
    // The extent: the last element the view reaches, which must lie inside the storage.
    int64_t numel = 1, last = t.offset;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      const int64_t n = t.sizes[d], s = t.strides[d];
      if (n < 0 || s < 0) {
        return Err("tensor of sizes/strides with a negative value (dimension " + std::to_string(d) +
                   ": " + std::to_string(n) + "/" + std::to_string(s) + ")");
      }
      int64_t step = 0;
      if (!MulOk(numel, n, &numel) ||
          (n > 0 && (!MulOk(n - 1, s, &step) || !AddOk(last, step, &last)))) {
        return Err("tensor sizes/strides overflow 64 bits");
      }
    }
    t.numel = numel;
    if (numel > 0 && last >= storage_numel) {
      return Err("tensor of sizes " + Shape(t.sizes) + ", strides " + Shape(t.strides) +
                 " and offset " + std::to_string(t.offset) + " reaches element " +
                 std::to_string(last) + " of storage '" + t.storage + "', which holds " +
                 std::to_string(storage_numel));
    }
    if (numel > storage_numel || t.offset > storage_numel) {
      return Err("tensor of " + std::to_string(numel) + " elements over storage '" + t.storage +
                 "' of " + std::to_string(storage_numel) + " (a broadcast view)");
    }
    if (++tensors_ > kPickleMaxTensors) {
      return Err("more than " + std::to_string(kPickleMaxTensors) + " tensors");
    }
    Ptr v = Make(Kind::kTensor);
    v->tensor = std::move(t);
    stack_.push_back(std::move(v));
    return Status::Ok();
  }

  static std::string Shape(const std::vector<int64_t>& v) {
    std::string s = "(";
    for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
    return s + ")";
  }

  Status Reduce() {
    BATON_RETURN_IF_ERROR(Need(2, "REDUCE"));
    const Ptr args = Pop();
    const Ptr fn = Pop();
    if (fn->kind != Kind::kGlobal) return Err(std::string("REDUCE of ") + KindName(fn->kind));
    if (args->kind != Kind::kTuple) return Err("REDUCE with arguments that are not a tuple");
    if (fn->s == "collections OrderedDict") {
      if (!args->items.empty()) return Err("OrderedDict(...) with arguments");
      stack_.push_back(Make(Kind::kDict));
      return Status::Ok();
    }
    if (fn->s != "torch._utils _rebuild_tensor_v2") {
      return Err("REDUCE of '" + fn->s + "', which is not a function torch.save calls");
    }
    return RebuildTensor(*args);
  }

  Status Global() {
    std::string parts[2];
    for (auto& part : parts) {
      const size_t nl = p_.find('\n', pos_);
      if (nl == std::string_view::npos || nl - pos_ > 128) {
        return Err("GLOBAL: a name that does not end in a newline within 128 bytes");
      }
      part.assign(p_.substr(pos_, nl - pos_));
      pos_ = nl + 1;
    }
    const std::string name = parts[0] + " " + parts[1];
    const bool storage = parts[0] == "torch" && parts[1].size() > 7 &&
                         parts[1].compare(parts[1].size() - 7, 7, "Storage") == 0 &&
                         StorageElementSize(parts[1].substr(0, parts[1].size() - 7)) > 0;
    if (!storage && name != "torch._utils _rebuild_tensor_v2" &&
        name != "collections OrderedDict") {
      return Err("global '" + parts[0] + "." + parts[1] +
                 "' is not one torch.save writes for tensors (refused, never called)");
    }
    Ptr g = Make(Kind::kGlobal);
    g->s = name;
    stack_.push_back(std::move(g));
    return Status::Ok();
  }

  Status Step(uint8_t op, bool* stop) {
    switch (op) {
      case '.':  // STOP
        *stop = true;
        return Status::Ok();
      case '(':  // MARK
        if (marks_.size() >= kPickleMaxMarks) {
          return Err("more than " + std::to_string(kPickleMaxMarks) + " open marks");
        }
        marks_.push_back(stack_.size());
        return Status::Ok();
      case '0':  // POP
        BATON_RETURN_IF_ERROR(Need(1, "POP"));
        stack_.pop_back();
        return Status::Ok();
      case 'N':
        stack_.push_back(Make(Kind::kNone));
        return Status::Ok();
      case 0x88:    // NEWTRUE
      case 0x89: {  // NEWFALSE
        Ptr v = Make(Kind::kBool);
        v->b = op == 0x88;
        stack_.push_back(std::move(v));
        return Status::Ok();
      }
      case 'K':  // BININT1
        BATON_RETURN_IF_ERROR(Bytes(1, "BININT1"));
        PushInt(int64_t(Le(1)));
        return Status::Ok();
      case 'M':  // BININT2
        BATON_RETURN_IF_ERROR(Bytes(2, "BININT2"));
        PushInt(int64_t(Le(2)));
        return Status::Ok();
      case 'J':  // BININT
        BATON_RETURN_IF_ERROR(Bytes(4, "BININT"));
        PushInt(int64_t(int32_t(uint32_t(Le(4)))));
        return Status::Ok();
      case 0x8a: {  // LONG1: n bytes of two's complement, little-endian
        BATON_RETURN_IF_ERROR(Bytes(1, "LONG1"));
        const int n = int(Le(1));
        if (n > 8) return Err("LONG1 of " + std::to_string(n) + " bytes (over 64 bits)");
        BATON_RETURN_IF_ERROR(Bytes(size_t(n), "LONG1"));
        uint64_t v = n ? Le(n) : 0;
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);
        PushInt(int64_t(v));
        return Status::Ok();
      }
      case 'G': {  // BINFLOAT: big-endian double
        BATON_RETURN_IF_ERROR(Bytes(8, "BINFLOAT"));
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | uint8_t(p_[pos_++]);
        Ptr v = Make(Kind::kFloat);
        std::memcpy(&v->f, &bits, 8);
        stack_.push_back(std::move(v));
        return Status::Ok();
      }
      case 'X': {  // BINUNICODE
        BATON_RETURN_IF_ERROR(Bytes(4, "BINUNICODE"));
        const uint64_t n = Le(4);
        BATON_RETURN_IF_ERROR(Bytes(size_t(n), "BINUNICODE"));
        Ptr v = Make(Kind::kString);
        v->s.assign(p_.substr(pos_, size_t(n)));
        pos_ += size_t(n);
        stack_.push_back(std::move(v));
        return Status::Ok();
      }
      case ']':    // EMPTY_LIST
      case '}': {  // EMPTY_DICT
        Ptr v = Make(op == ']' ? Kind::kList : Kind::kDict);
        v->depth = 1;
        stack_.push_back(std::move(v));
        return Status::Ok();
      }
      case ')':  // EMPTY_TUPLE
        return MakeTuple(0);
      case 0x85:  // TUPLE1..3
      case 0x86:
      case 0x87: {
        const size_t n = size_t(op - 0x84);
        BATON_RETURN_IF_ERROR(Need(n, op == 0x85 ? "TUPLE1" : op == 0x86 ? "TUPLE2" : "TUPLE3"));
        return MakeTuple(n);
      }
      case 't': {  // TUPLE: everything above the mark
        if (marks_.empty()) return Err("TUPLE without a MARK");
        const size_t n = Above();
        marks_.pop_back();
        return MakeTuple(n);
      }
      case 'a':  // APPEND
        BATON_RETURN_IF_ERROR(Need(2, "APPEND"));
        return Appends(*stack_[stack_.size() - 2], stack_.size() - 1);
      case 'e': {  // APPENDS
        if (marks_.empty()) return Err("APPENDS without a MARK");
        const size_t from = marks_.back();
        marks_.pop_back();
        if (from <= Fence() || from == 0) return Err("APPENDS with no list below its MARK");
        return Appends(*stack_[from - 1], from);
      }
      case 's':  // SETITEM
        BATON_RETURN_IF_ERROR(Need(3, "SETITEM"));
        return SetItems(*stack_[stack_.size() - 3], stack_.size() - 2);
      case 'u': {  // SETITEMS
        if (marks_.empty()) return Err("SETITEMS without a MARK");
        const size_t from = marks_.back();
        marks_.pop_back();
        if (from <= Fence() || from == 0) return Err("SETITEMS with no dict below its MARK");
        return SetItems(*stack_[from - 1], from);
      }
      case 'q':  // BINPUT
        BATON_RETURN_IF_ERROR(Bytes(1, "BINPUT"));
        return Memo(Le(1));
      case 'r':  // LONG_BINPUT
        BATON_RETURN_IF_ERROR(Bytes(4, "LONG_BINPUT"));
        return Memo(Le(4));
      case 'h':  // BINGET
        BATON_RETURN_IF_ERROR(Bytes(1, "BINGET"));
        return Get(Le(1));
      case 'j':  // LONG_BINGET
        BATON_RETURN_IF_ERROR(Bytes(4, "LONG_BINGET"));
        return Get(Le(4));
      case 'c':  // GLOBAL
        return Global();
      case 'R':
        return Reduce();
      case 'Q':
        return PersistentId();
      case 0x80:
        return Err("a second PROTO");
      default: {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", op);
        return Err(std::string("opcode ") + hex + " (" + OpName(op) +
                   ") is not one torch.save writes for tensors");
      }
    }
  }

  std::string_view p_;
  const std::function<int64_t(const std::string&)>& storage_bytes_;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, Ptr> memo_;
  int64_t tensors_ = 0;
};

}  // namespace

const PickleValue* PickleValue::Get(const std::string& key) const {
  if (kind != Kind::kDict) return nullptr;
  for (size_t e = 0; e + 1 < items.size(); e += 2) {
    if (items[e]->kind == Kind::kString && items[e]->s == key) return items[e + 1].get();
  }
  return nullptr;
}

Status ScanPickle(std::string_view pickle,
                  const std::function<int64_t(const std::string& key)>& storage_bytes,
                  std::shared_ptr<const PickleValue>* root) {
  return Scanner(pickle, storage_bytes).Run(root);
}

Status ScanTorchSave(std::string_view file, TorchSave* out) {
  auto members = ReadStoredZip(file);
  if (!members.ok()) return members.status();
  if (members->empty()) return Status::Data("an empty zip archive");
  // Every member lies under one folder, the archive's name (torch.save: the file's stem).
  const std::string& first = members->front().name;
  const size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0) {
    return Status::Data("zip member '" + first + "' is not inside the archive's folder");
  }
  const std::string archive = first.substr(0, slash + 1);
  const ZipMember* pickle = nullptr;
  std::map<std::string, ZipMember> storages;
  for (const auto& m : *members) {
    if (m.name.compare(0, archive.size(), archive) != 0) {
      return Status::Data("zip member '" + m.name + "' is outside the archive's folder '" +
                          archive + "'");
    }
    const std::string rel = m.name.substr(archive.size());
    if (rel == "data.pkl") pickle = &m;
    if (rel.rfind("data/", 0) == 0) storages[rel.substr(5)] = m;
    if (rel == "byteorder" && file.substr(m.offset, m.size) != "little") {
      return Status::Data("byteorder '" +
                          std::string(file.substr(m.offset, std::min<uint64_t>(m.size, 16))) +
                          "' (little-endian files only)");
    }
  }
  if (!pickle) return Status::Data("no " + archive + "data.pkl member (not a torch.save file)");
  std::shared_ptr<const PickleValue> root;
  BATON_RETURN_IF_ERROR(ScanPickle(
      file.substr(pickle->offset, pickle->size),
      [&](const std::string& key) -> int64_t {
        auto it = storages.find(key);
        return it == storages.end() ? -1 : int64_t(it->second.size);
      },
      &root));
  if (out) {
    out->root = std::move(root);
    out->storages = std::move(storages);
  }
  return Status::Ok();
}

}  // namespace baton
