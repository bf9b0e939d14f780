#include "schema/yaml_section.h"

namespace baton::config_reader {

Section::Section(Context& ctx, const YAML::Node& root, std::string name)
    : ctx_(ctx), name_(std::move(name)) {
  // Nodes of absent keys are "invalid" in yaml-cpp and throw on assignment: copy-construct.
  const YAML::Node found = root[name_];
  if (!found.IsDefined() || found.IsNull()) return;
  if (!found.IsMap()) {
    ctx_.Error(found, name_, "expected a mapping of keys, got " + Describe(found));
    return;
  }
  node_.reset(found);
}

// Returns the value node, or an invalid node when absent (the default stays).
YAML::Node Section::Get(const char* key, bool required) {
  seen_.insert(key);
  const YAML::Node& n = node_;  // const access never inserts keys
  if (!present() || !n[key]) {
    if (required) {
      ctx_.Error(present() ? node_ : root_mark_, Key(key), "required key is missing");
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return n[key];
}

void Section::Int(const char* key, int64_t* out, int64_t min, int64_t max, bool required) {
  YAML::Node v = Get(key, required);
  if (!v.IsDefined()) return;
  int64_t x = 0;
  if (!ParseInt(v, &x)) {
    ctx_.Error(v, Key(key), "expected an integer, got " + Describe(v) + StringNumberHint(v));
  } else if (x < min || x > max) {
    const std::string range = max == kMaxInt
                                  ? ">= " + std::to_string(min)
                                  : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    ctx_.Error(v, Key(key),
               "value " + std::to_string(x) + " is out of range (must be " + range + ")");
  } else {
    *out = x;
  }
}

void Section::Float(const char* key, double* out, double min, double max, bool min_open) {
  YAML::Node v = Get(key);
  if (!v.IsDefined()) return;
  double x = 0;
  if (!ParseFloat(v, &x)) {
    ctx_.Error(v, Key(key), "expected a finite number, got " + Describe(v) + StringNumberHint(v));
  } else if (!InFloatRange(x)) {
    const std::string range =
        "finite and within float32's range, |x| <= " + FormatDouble(kFloatMax);
    ctx_.Error(v, Key(key), "value " + v.Scalar() + " is out of range (must be " + range + ")");
  } else if (x < min || x > max || (min_open && x == min)) {
    ctx_.Error(
        v, Key(key),
        "value " + v.Scalar() + " is out of range (must be " + RangeText(min, max, min_open) + ")");
  } else if (min_open && static_cast<float>(x) == static_cast<float>(min)) {
    ctx_.Error(v, Key(key),
               "value " + v.Scalar() + " is out of range (must be " +
                   RangeText(min, max, min_open) + "; it rounds to " + FormatDouble(min) +
                   " in float32)");
  } else {
    *out = x;
  }
}

bool Section::String(const char* key, std::string* out, bool required) {
  YAML::Node v = Get(key, required);
  if (!v.IsDefined()) return false;
  if (v.IsNull()) {
    out->clear();
    return true;
  }
  if (!v.IsScalar()) {
    ctx_.Error(v, Key(key), "expected a string, got " + Describe(v));
    return false;
  }
  *out = v.Scalar();
  return true;
}

void Section::Finish() {
  if (!present()) return;
  const YAML::Node& n = node_;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (!seen_.count(k)) {
      ctx_.Error(kv.first, Key(k.c_str()), "unknown key (known: " + Known() + ")");
    }
  }
}

std::string Section::Known() const {
  std::string s;
  for (const auto& k : seen_) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace baton::config_reader
