#include "schema/memory_plan_report.h"

#include <type_traits>
#include <utility>

namespace baton {

namespace {

using Report = MemoryPlanReport;
using AC = ActivationCheckpointing;

// ---- The keys: one table per part, in report order. `f(key, field of each r...)`. ----------

template <class T>
struct Keys {
  static constexpr bool kRecord = false;
};

template <>
struct Keys<Report::Parameters> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f("total", r.total...);
    f("trainable", r.trainable...);
  }
};

template <>
struct Keys<Report::Row> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f("source", r.source...);
    f("batch", r.batch...);
    f("padded_frames", r.padded_frames...);
    f("tokens", r.tokens...);
    f("valid_tokens", r.valid_tokens...);
    f("key_slots", r.key_slots...);
    f("computed_pairs", r.computed_pairs...);
    f("recomputed_call_pairs", r.recomputed_call_pairs...);
    f("chunk", r.chunk...);
    f("window", r.window...);
  }
};

template <>
struct Keys<Report::Bytes> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f("weights", r.weights...);
    f("master_share", r.master_share...);
    f("gradients", r.gradients...);
    f("gradients_held", r.gradients_held...);
    f("optimizer", r.optimizer...);
    f("collective_buffers", r.collective_buffers...);
    f("autocast_copies", r.autocast_copies...);
    f("activations", r.activations...);
    f("heap_overhead", r.heap_overhead...);
    f("runtime", r.runtime...);
    f("checkpoint_snapshot", r.checkpoint_snapshot...);
    f("total", r.total...);
  }
};

// Per checkpointing setting, keyed by the setting's name.
template <>
struct Keys<Report::Activations> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f(Name(AC::kNone), r.none...);
    f(Name(AC::kBlocks), r.blocks...);
    f(Name(AC::kBlocksAttention), r.blocks_attention...);
    f("per_block", r.per_block...);
    f("outside_blocks", r.outside_blocks...);
    f("inputs", r.inputs...);
    f("working", r.working...);
    f("per_block_attention", r.per_block_attention...);
    f("attention_call", r.attention_call...);
    f("working_attention", r.working_attention...);
  }
};

template <>
struct Keys<Report::Checkpoint> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f("bytes_total", r.bytes_total...);
    f("bytes_per_rank_max", r.bytes_per_rank_max...);
    f("export_dtype", r.export_dtype...);
    f("disk_bytes", r.disk_bytes...);
    f("disk_files", r.disk_files...);
    f("rank_bytes", r.rank_bytes...);  // the one key that may be left out
  }
};

template <>
struct Keys<Report::Totals> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f(Name(AC::kNone), r.none...);
    f(Name(AC::kBlocks), r.blocks...);
    f(Name(AC::kBlocksAttention), r.blocks_attention...);
  }
};

template <>
struct Keys<Report::Limit> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f("key", r.key...);
    f("gb", r.gb...);
    f("bytes", r.bytes...);
  }
};

template <>
struct Keys<Report> {
  static constexpr bool kRecord = true;
  template <class F, class... R>
  static void Visit(F& f, R&... r) {
    f("config", r.config...);
    f("world_size", r.world_size...);
    f("dtype", r.dtype...);
    f("device", r.device...);
    f("shard", r.shard...);
    f("master", r.master...);
    f("activation_checkpointing", r.activation_checkpointing...);
    f("parameters", r.parameters...);
    f("row", r.row...);
    f("bytes", r.bytes...);
    f("checkpoint_snapshot_in_total", r.checkpoint_snapshot_in_total...);
    f("activations", r.activations...);
    f("heap_factor", r.heap_factor...);
    f("checkpoint", r.checkpoint...);
    f("total_by_checkpointing", r.total_by_checkpointing...);
    f("limit", r.limit...);
    f("fits", r.fits...);
  }
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

using IntList = std::vector<int64_t>;

// ---- Writing. ----

nlohmann::ordered_json Encode(int64_t v) { return v; }
nlohmann::ordered_json Encode(double v) { return v; }
nlohmann::ordered_json Encode(bool v) { return v; }
nlohmann::ordered_json Encode(const std::string& v) { return v; }
nlohmann::ordered_json Encode(const IntList& v) { return v; }

template <class T>
nlohmann::ordered_json Encode(const T& v);

struct Writer {
  nlohmann::ordered_json* out;
  template <class T>
  void operator()(const char* key, const T& v) {
    if constexpr (std::is_same_v<T, IntList>) {
      if (v.empty()) return;  // left out, not []
    }
    (*out)[key] = Encode(v);
  }
};

template <class T>
nlohmann::ordered_json Encode(const T& v) {
  if constexpr (Keys<T>::kRecord) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    Writer w{&j};
    Keys<T>::Visit(w, v);
    return j;
  } else if constexpr (IsOptional<T>::value) {
    return v ? Encode(*v) : nlohmann::ordered_json(nullptr);
  } else {
    static_assert(std::is_enum_v<T>);
    return Name(v);
  }
}

// ---- Reading. ----

Status Mistyped(const std::string& where, const char* expected, const nlohmann::json& j) {
  return Status::InvalidArgument(where + ": expected " + expected + ", got " + j.type_name());
}

Status Decode(const nlohmann::json& j, const std::string& where, int64_t* v) {
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) {
    return Status::InvalidArgument(where + ": " + j.dump() + " is outside int64");
  }
  if (!j.is_number_integer()) return Mistyped(where, "an integer", j);
  *v = j.get<int64_t>();
  return Status::Ok();
}

Status Decode(const nlohmann::json& j, const std::string& where, double* v) {
  if (!j.is_number()) return Mistyped(where, "a number", j);
  *v = j.get<double>();
  return Status::Ok();
}

Status Decode(const nlohmann::json& j, const std::string& where, bool* v) {
  if (!j.is_boolean()) return Mistyped(where, "true or false", j);
  *v = j.get<bool>();
  return Status::Ok();
}

Status Decode(const nlohmann::json& j, const std::string& where, std::string* v) {
  if (!j.is_string()) return Mistyped(where, "a string", j);
  *v = j.get<std::string>();
  return Status::Ok();
}

Status Decode(const nlohmann::json& j, const std::string& where, IntList* v) {
  if (!j.is_array()) return Mistyped(where, "an array", j);
  v->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    int64_t x = 0;
    BATON_RETURN_IF_ERROR(Decode(j[i], where + "[" + std::to_string(i) + "]", &x));
    v->push_back(x);
  }
  return Status::Ok();
}

template <class T>
Status Decode(const nlohmann::json& j, const std::string& where, T* v);

struct Reader {
  const nlohmann::json* in;
  std::string path;  // "" at the top, else "bytes" etc.
  Status status;
  template <class T>
  void operator()(const char* key, T& v) {
    if (!status.ok()) return;
    const std::string where = path.empty() ? std::string(key) : path + "." + key;
    const auto it = in->find(key);
    if (it == in->end()) {
      if constexpr (!std::is_same_v<T, IntList>)
        status = Status::InvalidArgument(where + ": missing");
      return;
    }
    status = Decode(*it, where, &v);
  }
};

template <class T>
Status Decode(const nlohmann::json& j, const std::string& where, T* v) {
  if constexpr (Keys<T>::kRecord) {
    if (!j.is_object()) return Mistyped(where, "an object", j);
    Reader r{&j, where, Status::Ok()};
    Keys<T>::Visit(r, *v);
    return r.status;
  } else if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      v->reset();
      return Status::Ok();
    }
    typename T::value_type x{};
    BATON_RETURN_IF_ERROR(Decode(j, where, &x));
    *v = std::move(x);
    return Status::Ok();
  } else {
    static_assert(std::is_enum_v<T>);
    if (!j.is_string()) return Mistyped(where, "a string", j);
    Result<T> parsed = Parse<T>(j.get<std::string>());
    if (!parsed.ok()) return Status::InvalidArgument(where + ": " + parsed.status().message());
    *v = parsed.value();
    return Status::Ok();
  }
}

// ---- Comparing. ----

template <class T>
bool Same(const T& a, const T& b);

struct Comparer {
  bool same = true;
  template <class T>
  void operator()(const char*, const T& a, const T& b) {
    same = same && Same(a, b);
  }
};

template <class T>
bool Same(const T& a, const T& b) {
  if constexpr (Keys<T>::kRecord) {
    Comparer c;
    Keys<T>::Visit(c, a, b);
    return c.same;
  } else if constexpr (IsOptional<T>::value) {
    return a.has_value() == b.has_value() && (!a || Same(*a, *b));
  } else {
    return a == b;
  }
}

}  // namespace

nlohmann::ordered_json MemoryPlanReport::ToJson() const { return Encode(*this); }

Result<MemoryPlanReport> MemoryPlanReport::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Mistyped("the memory plan report", "an object", j);
  MemoryPlanReport r;
  BATON_RETURN_IF_ERROR(Decode(j, "", &r));
  return r;
}

const char* MemoryLimitKey(Device device) {
  return device == Device::kCuda ? "slurm.gpu_memory_gb" : "slurm.mem_per_task_gb";
}

bool MemoryPlanReport::operator==(const MemoryPlanReport& other) const {
  return Same(*this, other);
}

}  // namespace baton
