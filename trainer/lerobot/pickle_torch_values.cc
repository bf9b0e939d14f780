// The torch side of the pickle machine: persistent storages, `_rebuild_tensor_v2` and the only
// globals torch.save writes; and ScanTorchSave, the zip around the pickle.
#include <algorithm>

#include "trainer/lerobot/pickle_machine.h"
#include "trainer/lerobot/pickle_scan.h"

namespace baton {
namespace pickle {

Status Scanner::PersistentId() {
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

bool Scanner::IntTuple(const PickleValue& v, std::vector<int64_t>* out) {
  if (v.kind != Kind::kTuple) return false;
  for (const auto& x : v.items) {
    if (x->kind != Kind::kInt) return false;
    out->push_back(x->i);
  }
  return true;
}

Status Scanner::RebuildTensor(const PickleValue& args) {
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

std::string Scanner::Shape(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + ")";
}

Status Scanner::Reduce() {
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

Status Scanner::Global() {
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
  if (!storage && name != "torch._utils _rebuild_tensor_v2" && name != "collections OrderedDict") {
    return Err("global '" + parts[0] + "." + parts[1] +
               "' is not one torch.save writes for tensors (refused, never called)");
  }
  Ptr g = Make(Kind::kGlobal);
  g->s = name;
  stack_.push_back(std::move(g));
  return Status::Ok();
}

}  // namespace pickle

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
