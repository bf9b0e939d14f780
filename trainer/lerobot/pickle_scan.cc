#include "trainer/lerobot/pickle_scan.h"

#include <cstdio>
#include <cstring>

#include "trainer/lerobot/pickle_machine.h"

namespace baton {
namespace pickle {

Status Scanner::Run(std::shared_ptr<const PickleValue>* root) {
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
    if (ops >= kPickleMaxOps) return Err("more than " + std::to_string(kPickleMaxOps) + " opcodes");
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

// `item` goes inside `into`: it is sealed, and `into` grows by its depth.
Status Scanner::Seal(PickleValue& into, const Ptr& item) {
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

Status Scanner::Insert(PickleValue& into, const Ptr& item) {
  BATON_RETURN_IF_ERROR(Seal(into, item));
  into.items.push_back(item);
  return Status::Ok();
}

Status Scanner::MakeTuple(size_t n) {
  Ptr t = Make(Kind::kTuple);
  t->depth = 1;
  const size_t from = stack_.size() - n;
  for (size_t k = from; k < stack_.size(); ++k) BATON_RETURN_IF_ERROR(Insert(*t, stack_[k]));
  stack_.resize(from);
  stack_.push_back(std::move(t));
  return Status::Ok();
}

Status Scanner::SetItems(PickleValue& dict, size_t from) {
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

Status Scanner::Appends(PickleValue& list, size_t from) {
  if (list.kind != Kind::kList) {
    return Err(std::string("APPEND(S) on ") + KindName(list.kind) + ", not a list");
  }
  for (size_t k = from; k < stack_.size(); ++k) BATON_RETURN_IF_ERROR(Insert(list, stack_[k]));
  stack_.resize(from);
  return Status::Ok();
}

Status Scanner::Memo(uint64_t idx) {
  if (idx >= kPickleMaxMemo) {
    return Err("memo index " + std::to_string(idx) + " (at most " +
               std::to_string(kPickleMaxMemo - 1) + ")");
  }
  if (stack_.empty() || Above() == 0) return Err("PUT with nothing on the stack");
  memo_[uint32_t(idx)] = stack_.back();
  return Status::Ok();
}

Status Scanner::Get(uint64_t idx) {
  auto it = memo_.find(uint32_t(idx));
  if (idx >= kPickleMaxMemo || it == memo_.end()) {
    return Err("GET of memo index " + std::to_string(idx) + ", never PUT");
  }
  stack_.push_back(it->second);
  return Status::Ok();
}

// One opcode, dispatched by its group; each group's handler reads its own argument bytes and
// checks the stack it pops.
Status Scanner::Step(uint8_t op, bool* stop) {
  switch (op) {
    case '.':  // STOP
      *stop = true;
      return Status::Ok();
    case '(':  // MARK
    case '0':  // POP
      return StackOp(op);
    case 'N':   // NONE
    case 0x88:  // NEWTRUE
    case 0x89:  // NEWFALSE
      return ConstOp(op);
    case 'K':   // BININT1
    case 'M':   // BININT2
    case 'J':   // BININT
    case 0x8a:  // LONG1
      return IntOp(op);
    case 'G':  // BINFLOAT
      return BinFloat();
    case 'X':  // BINUNICODE
      return BinUnicode();
    case ']':   // EMPTY_LIST
    case '}':   // EMPTY_DICT
    case ')':   // EMPTY_TUPLE
    case 0x85:  // TUPLE1
    case 0x86:  // TUPLE2
    case 0x87:  // TUPLE3
    case 't':   // TUPLE
      return BuildOp(op);
    case 'a':  // APPEND
    case 'e':  // APPENDS
    case 's':  // SETITEM
    case 'u':  // SETITEMS
      return FillOp(op);
    case 'q':  // BINPUT
    case 'r':  // LONG_BINPUT
    case 'h':  // BINGET
    case 'j':  // LONG_BINGET
      return MemoOp(op);
    case 'c':  // GLOBAL
      return Global();
    case 'R':  // REDUCE
      return Reduce();
    case 'Q':  // BINPERSID
      return PersistentId();
    case 0x80:  // PROTO
      return Err("a second PROTO");
    default:
      return Refuse(op);
  }
}

// The group handlers end in Refuse for an opcode outside their group, which Step never sends.
Status Scanner::Refuse(uint8_t op) const {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", op);
  return Err(std::string("opcode ") + hex + " (" + OpName(op) +
             ") is not one torch.save writes for tensors");
}

Status Scanner::StackOp(uint8_t op) {
  switch (op) {
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
  }
  return Refuse(op);
}

Status Scanner::ConstOp(uint8_t op) {
  switch (op) {
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
  }
  return Refuse(op);
}

Status Scanner::IntOp(uint8_t op) {
  switch (op) {
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
  }
  return Refuse(op);
}

// BINFLOAT: a big-endian double.
Status Scanner::BinFloat() {
  BATON_RETURN_IF_ERROR(Bytes(8, "BINFLOAT"));
  uint64_t bits = 0;
  for (int k = 0; k < 8; ++k) bits = (bits << 8) | uint8_t(p_[pos_++]);
  Ptr v = Make(Kind::kFloat);
  std::memcpy(&v->f, &bits, 8);
  stack_.push_back(std::move(v));
  return Status::Ok();
}

Status Scanner::BinUnicode() {
  BATON_RETURN_IF_ERROR(Bytes(4, "BINUNICODE"));
  const uint64_t n = Le(4);
  BATON_RETURN_IF_ERROR(Bytes(size_t(n), "BINUNICODE"));
  Ptr v = Make(Kind::kString);
  v->s.assign(p_.substr(pos_, size_t(n)));
  pos_ += size_t(n);
  stack_.push_back(std::move(v));
  return Status::Ok();
}

// The opcodes that make a container: an empty list or dict, or a tuple of what the stack holds.
Status Scanner::BuildOp(uint8_t op) {
  switch (op) {
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
  }
  return Refuse(op);
}

// The opcodes that fill a list or a dict already on the stack.
Status Scanner::FillOp(uint8_t op) {
  switch (op) {
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
  }
  return Refuse(op);
}

Status Scanner::MemoOp(uint8_t op) {
  switch (op) {
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
  }
  return Refuse(op);
}

}  // namespace pickle

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
  return pickle::Scanner(pickle, storage_bytes).Run(root);
}

}  // namespace baton
