#include "schema/strict_yaml.h"

#include <yaml-cpp/eventhandler.h>

#include <charconv>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>

namespace baton::config_reader {

std::string MarkText(const std::string& source, const YAML::Mark& mark) {
  if (mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

namespace {

// Walks the YAML events (which keep every key and its position, unlike YAML::Node, whose maps
// hide a repeated key) and reports each key given twice in one mapping, naming both places.
class RepeatedKeyFinder : public YAML::EventHandler {
 public:
  explicit RepeatedKeyFinder(Context& ctx) : ctx_(ctx) {}

  void OnDocumentStart(const YAML::Mark&) override { stack_.clear(); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override {
    static const std::string kNull = "null";
    Leaf(mark, &kNull);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Leaf(mark, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    Leaf(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/false);
  }
  void OnSequenceEnd() override { stack_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Open(mark, /*is_map=*/true);
  }
  void OnMapEnd() override { stack_.pop_back(); }

 private:
  struct Frame {
    bool is_map = false;
    std::string path;                        // key path of this container ("" for the root)
    bool expect_key = true;                  // maps alternate key, value
    std::string value_path;                  // path of the value after the key just read
    std::map<std::string, YAML::Mark> keys;  // scalar keys seen, with where
    int64_t items = 0;                       // sequences: items seen
  };

  // A node begins: as a key or a value of the enclosing mapping, or an item of a list. Returns
  // the node's own key path. `key` is the scalar text when the node is a scalar.
  std::string Begin(const YAML::Mark& mark, const std::string* key) {
    if (stack_.empty()) return "";
    Frame& f = stack_.back();
    if (!f.is_map) return f.path + "[" + std::to_string(f.items++) + "]";
    if (!f.expect_key) {
      f.expect_key = true;
      return f.value_path;
    }
    f.expect_key = false;
    if (key == nullptr) {  // a list, mapping or alias as a key: the validator names it
      f.value_path = f.path.empty() ? "?" : f.path + ".?";
      return f.value_path;
    }
    f.value_path = f.path.empty() ? *key : f.path + "." + *key;
    auto [it, inserted] = f.keys.emplace(*key, mark);
    if (!inserted) {
      const bool section = stack_.size() == 1;
      ctx_.Add(MarkText(ctx_.source, mark) + ": " + f.value_path + ": repeated " +
               (section ? "section" : "key") + ", first given at " +
               MarkText(ctx_.source, it->second) + " (YAML readers would keep only one of them)");
    }
    return f.value_path;
  }
  void Leaf(const YAML::Mark& mark, const std::string* scalar) { Begin(mark, scalar); }
  void Open(const YAML::Mark& mark, bool is_map) {
    Frame f;
    f.is_map = is_map;
    f.path = Begin(mark, nullptr);
    stack_.push_back(std::move(f));
  }

  Context& ctx_;
  std::vector<Frame> stack_;
};

const std::regex& IntPattern() {
  static const std::regex kInt("[-+]?[0-9]+");
  return kInt;
}
const std::regex& FloatPattern() {
  static const std::regex kFloat("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  return kFloat;
}

// A scalar is a number only when its tag says so: plain ("?") or an explicit !!int / !!float.
// Quoted scalars carry the "!" tag and `!!str 4` the str tag: `batch_size: "4"` is a string.
bool IsNumberScalar(const YAML::Node& node, bool allow_float) {
  if (!node.IsScalar()) return false;
  const std::string& tag = node.Tag();
  return tag == "?" || tag == "tag:yaml.org,2002:int" ||
         (allow_float && tag == "tag:yaml.org,2002:float");
}

}  // namespace

// The checks YAML::Node cannot make: repeated keys, and a second document (which YAML::Load
// would drop without a word). Returns false when the text is not YAML at all.
bool CheckYamlStructure(Context& ctx, const std::string& yaml_text) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  RepeatedKeyFinder finder(ctx);
  try {
    if (!parser.HandleNextDocument(finder)) return true;
    struct SecondDocument : YAML::EventHandler {
      YAML::Mark start;
      void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
      void OnDocumentEnd() override {}
      void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
      void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
      void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    const std::string&) override {}
      void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                           YAML::EmitterStyle::value) override {}
      void OnSequenceEnd() override {}
      void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                      YAML::EmitterStyle::value) override {}
      void OnMapEnd() override {}
    } second;
    if (parser.HandleNextDocument(second)) {
      ctx.Add(MarkText(ctx.source, second.start) +
              ": a second YAML document starts here; a run config is one document "
              "(remove the '---' line and what follows, or merge it into the first)");
    }
  } catch (const YAML::Exception& e) {
    ctx.Add(MarkText(ctx.source, e.mark) + ": malformed YAML: " + e.msg);
    return false;
  }
  return true;
}

std::string Describe(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  return "'" + node.Scalar() + "'";
}

// For messages: a string that would be a number without its quotes or tag.
std::string StringNumberHint(const YAML::Node& node) {
  if (!node.IsScalar() || IsNumberScalar(node, /*allow_float=*/true)) return "";
  if (!std::regex_match(node.Scalar(), FloatPattern())) return "";
  return " (quoted or tagged !!str, so a string, not a number)";
}

bool ParseInt(const YAML::Node& node, int64_t* out) {
  if (!IsNumberScalar(node, /*allow_float=*/false)) return false;
  const std::string& s = node.Scalar();
  if (!std::regex_match(s, IntPattern())) return false;
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// True when `node` is written as a decimal number; `*out` may then be +-inf (1e400) or beyond
// float32's range (1e39): the caller reports those as out of range, naming the value.
bool ParseFloat(const YAML::Node& node, double* out) {
  if (!IsNumberScalar(node, /*allow_float=*/true)) return false;
  const std::string& s = node.Scalar();
  if (!std::regex_match(s, FloatPattern())) return false;
  *out = std::strtod(s.c_str(), nullptr);
  return true;
}

bool InFloatRange(double x) { return std::isfinite(x) && std::abs(x) <= kFloatMax; }

std::string FormatDouble(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ptr);
  // Keep it a float for readers that care ("1" -> "1.0"), and keep exponents YAML-friendly.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string RangeText(double min, double max, bool min_open) {
  std::ostringstream os;
  if (max == kInf) {
    os << (min_open ? "> " : ">= ") << FormatDouble(min);
  } else {
    os << "in " << (min_open ? "(" : "[") << FormatDouble(min) << ", " << FormatDouble(max) << "]";
  }
  return os.str();
}

}  // namespace baton::config_reader
