#include "schema/run_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "schema/file_kind.h"

namespace baton {
namespace fs = std::filesystem;

const char* SamplerPlanName(SamplerPlan plan) {
  return plan == SamplerPlan::kGlobal ? "global" : "per_rank";
}

const char* DTypeName(DType dtype) { return Name(dtype); }

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
// The trainer computes in float32 (or bfloat16, whose range is float32's): a float key beyond
// this turns into inf on the first step.
constexpr double kFloatMax = FLT_MAX;

std::string MarkText(const std::string& source, const YAML::Mark& mark) {
  if (mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Collects every problem so a user fixes a config in one round trip, not one error per run;
// keeps the first kMaxRunConfigErrors and counts the rest.
struct Context {
  std::string source;
  fs::path anchor;  // folder that relative paths are resolved against
  RunConfigOptions options;
  std::vector<std::string> errors;
  size_t dropped = 0;  // errors past kMaxRunConfigErrors

  std::string Where(const YAML::Node& node) const { return MarkText(source, node.Mark()); }
  void Add(std::string line) {
    if (errors.size() < kMaxRunConfigErrors) {
      errors.push_back(std::move(line));
    } else {
      ++dropped;
    }
  }
  void Error(const YAML::Node& node, const std::string& key, const std::string& what) {
    Add(Where(node) + ": " + key + ": " + what);
  }
  Status ToStatus() const {
    std::string msg;
    for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    if (dropped > 0) msg += "\n... and " + std::to_string(dropped) + " more";
    return Status::Config(msg);
  }
};

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

// One mapping of the config: reads known keys, records what was read, reports the rest.
class Section {
 public:
  Section(Context& ctx, const YAML::Node& root, std::string name)
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
  bool present() const { return node_ && node_.IsMap(); }
  const YAML::Node& node() const { return node_; }

  // Returns the value node, or an invalid node when absent (the default stays).
  YAML::Node Get(const char* key, bool required = false) {
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

  void Int(const char* key, int64_t* out, int64_t min, int64_t max = kMaxInt,
           bool required = false) {
    YAML::Node v = Get(key, required);
    if (!v.IsDefined()) return;
    int64_t x = 0;
    if (!ParseInt(v, &x)) {
      ctx_.Error(v, Key(key), "expected an integer, got " + Describe(v) + StringNumberHint(v));
    } else if (x < min || x > max) {
      const std::string range =
          max == kMaxInt ? ">= " + std::to_string(min)
                         : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
      ctx_.Error(v, Key(key),
                 "value " + std::to_string(x) + " is out of range (must be " + range + ")");
    } else {
      *out = x;
    }
  }

  void Float(const char* key, double* out, double min, double max = kInf, bool min_open = false) {
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
      ctx_.Error(v, Key(key),
                 "value " + v.Scalar() + " is out of range (must be " +
                     RangeText(min, max, min_open) + ")");
    } else if (min_open && static_cast<float>(x) == static_cast<float>(min)) {
      ctx_.Error(v, Key(key),
                 "value " + v.Scalar() + " is out of range (must be " +
                     RangeText(min, max, min_open) + "; it rounds to " + FormatDouble(min) +
                     " in float32)");
    } else {
      *out = x;
    }
  }

  bool String(const char* key, std::string* out, bool required = false) {
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

  template <class E>
  void Enum(const char* key, E* out, const std::vector<std::pair<std::string, E>>& choices) {
    YAML::Node v = Get(key);
    if (!v.IsDefined()) return;
    std::string names;
    for (const auto& [name, value] : choices) {
      if (v.IsScalar() && v.Scalar() == name) {
        *out = value;
        return;
      }
      names += (names.empty() ? "" : ", ") + name;
    }
    ctx_.Error(v, Key(key), "expected one of " + names + ", got " + Describe(v));
  }

  void Finish() {
    if (!present()) return;
    const YAML::Node& n = node_;
    for (const auto& kv : n) {
      const std::string k = kv.first.as<std::string>();
      if (!seen_.count(k)) {
        ctx_.Error(kv.first, Key(k.c_str()), "unknown key (known: " + Known() + ")");
      }
    }
  }

  std::string Key(const char* key) const { return name_ + "." + key; }
  void set_root_mark(const YAML::Node& root) { root_mark_.reset(root); }
  Context& ctx() { return ctx_; }
  const std::string& name() const { return name_; }

 private:
  std::string Known() const {
    std::string s;
    for (const auto& k : seen_) s += (s.empty() ? "" : ", ") + k;
    return s;
  }

  Context& ctx_;
  std::string name_;
  YAML::Node node_;
  YAML::Node root_mark_;
  std::set<std::string> seen_;
};

bool ValidSlurmTime(const std::string& t) {
  // minutes | MM:SS | HH:MM:SS | D-HH | D-HH:MM | D-HH:MM:SS | UNLIMITED
  static const std::regex kTime(
      "UNLIMITED|[0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|"
      "[0-9]+-[0-9]{1,2}(:[0-9]{1,2}(:[0-9]{1,2})?)?");
  return std::regex_match(t, kTime);
}

// Opens `path` for reading only if it is a regular file. O_NONBLOCK: a FIFO swapped in after the
// stat must not block the open. Returns the fd, or -1 with `*why` set.
int OpenRegularFile(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *why = "it is " + FileKind(st.st_mode) + ", not a regular file";
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

// Counts a dataset's episodes the way the trainer's index reader does (the non-blank lines of
// meta/episodes.jsonl), reading only until `enough` are seen so a large index costs little.
// -1 when there is no index (the trainer reports that, naming it); a message when the index
// is not a regular file or cannot be read.
Result<int64_t> CountEpisodes(const std::string& index_path, int64_t enough) {
  struct stat st {};
  if (::stat(index_path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return int64_t{-1};
    return Status::Config(index_path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Config(index_path + " is " + FileKind(st.st_mode) + ", not a regular file");
  }
  std::string why;
  const int fd = OpenRegularFile(index_path, &why);
  if (fd < 0) return Status::Config(index_path + ": cannot read: " + why);
  int64_t count = 0;
  bool content = false;  // the current line holds a non-blank character
  char buf[1 << 16];
  while (count < enough) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char ch = buf[i];
      if (ch == '\n') {
        count += content ? 1 : 0;
        content = false;
      } else if (ch != ' ' && ch != '\t' && ch != '\r') {
        content = true;
      }
    }
  }
  ::close(fd);
  return count + (content ? 1 : 0);
}

std::string Resolve(const Context& ctx, const std::string& p) {
  if (p.empty()) return p;
  fs::path path(p);
  if (path.is_relative()) path = ctx.anchor / path;
  return fs::absolute(path).lexically_normal().string();
}

// ---- Every key once: how it is read (and checked) and how ToYaml writes it back. ------------

// One key of a section of type S.
template <class S>
struct ConfigKey {
  const char* name;
  std::function<void(Section&, S&)> read;
  std::function<void(YAML::Emitter&, const S&)> write;
};

template <class S>
ConfigKey<S> IntKey(const char* name, int64_t S::*f, int64_t min, int64_t max = kMaxInt,
                    bool required = false) {
  return {name, [=](Section& s, S& x) { s.Int(name, &(x.*f), min, max, required); },
          [=](YAML::Emitter& e, const S& x) { e << x.*f; }};
}

template <class S>
ConfigKey<S> FloatKey(const char* name, double S::*f, double min, double max = kInf,
                      bool min_open = false) {
  return {name, [=](Section& s, S& x) { s.Float(name, &(x.*f), min, max, min_open); },
          [=](YAML::Emitter& e, const S& x) { e << FormatDouble(x.*f); }};
}

template <class S>
ConfigKey<S> StringKey(const char* name, std::string S::*f) {
  return {name, [=](Section& s, S& x) { s.String(name, &(x.*f)); },
          [=](YAML::Emitter& e, const S& x) { e << x.*f; }};
}

template <class S, class E>
ConfigKey<S> EnumKey(const char* name, E S::*f, std::vector<std::pair<std::string, E>> choices) {
  return {name, [=](Section& s, S& x) { s.Enum<E>(name, &(x.*f), choices); },
          [=](YAML::Emitter& e, const S& x) {
            for (const auto& [text, value] : choices) {
              if (value == x.*f) e << text;
            }
          }};
}

// A key of a closed vocabulary (schema/vocabularies.h): its names, or only `allowed` of them.
template <class S, class E>
ConfigKey<S> VocabularyKey(const char* name, E S::*f, std::vector<E> allowed = {}) {
  std::vector<std::pair<std::string, E>> choices;
  for (const Word<E>& w : Vocabulary<E>::kWords) {
    if (allowed.empty() || std::find(allowed.begin(), allowed.end(), w.value) != allowed.end()) {
      choices.emplace_back(w.name, w.value);
    }
  }
  return EnumKey<S, E>(name, f, std::move(choices));
}

// A key whose reading needs more than a range (its own checks), written as a string.
template <class S>
ConfigKey<S> CustomStringKey(const char* name, std::string S::*f,
                             std::function<void(Section&, S&)> read) {
  return {name, std::move(read), [=](YAML::Emitter& e, const S& x) { e << x.*f; }};
}

template <class S>
void ReadKeys(Section& s, S& x, const std::vector<ConfigKey<S>>& keys) {
  for (const auto& k : keys) k.read(s, x);
}

const std::vector<ConfigKey<RunSection>>& RunKeys() {
  using S = RunSection;
  static const std::vector<ConfigKey<S>> keys = {
      CustomStringKey<S>("name", &S::name,
                         [](Section& s, S& x) {
                           if (!s.String("name", &x.name)) return;
                           static const std::regex kName("[^\\x00-\\x1f\\x7f]{1,128}");
                           if (!std::regex_match(x.name, kName)) {
                             s.ctx().Error(
                                 s.node()["name"], "run.name",
                                 "must be 1-128 characters without control characters, got '" +
                                     x.name + "'");
                           }
                         }),
      CustomStringKey<S>("dir", &S::dir,
                         [](Section& s, S& x) {
                           if (s.String("dir", &x.dir)) x.dir = Resolve(s.ctx(), x.dir);
                         }),
      IntKey<S>("steps", &S::steps, 1, kMaxInt, /*required=*/true),
      IntKey<S>("seed", &S::seed, 0),
  };
  return keys;
}

const std::vector<ConfigKey<SlurmSection>>& SlurmKeys() {
  using S = SlurmSection;
  static const std::vector<ConfigKey<S>> keys = {
      StringKey<S>("partition", &S::partition),
      StringKey<S>("qos", &S::qos),
      StringKey<S>("account", &S::account),
      IntKey<S>("nodes", &S::nodes, 1, 1 << 20),
      IntKey<S>("ntasks_per_node", &S::ntasks_per_node, 1, 1024),
      IntKey<S>("gpus_per_node", &S::gpus_per_node, 0, 64),
      IntKey<S>("cpus_per_task", &S::cpus_per_task, 1, 4096),
      // Up to 1 PiB: beyond any machine, and the bytes and MiB derived from it stay int64.
      FloatKey<S>("gpu_memory_gb", &S::gpu_memory_gb, 0.0, double(1 << 20)),
      FloatKey<S>("mem_per_task_gb", &S::mem_per_task_gb, 0.0, double(1 << 20)),
      CustomStringKey<S>("time", &S::time,
                         [](Section& s, S& x) {
                           if (s.String("time", &x.time) && !ValidSlurmTime(x.time)) {
                             s.ctx().Error(
                                 s.node()["time"], "slurm.time",
                                 "expected a SLURM time limit (minutes, MM:SS, HH:MM:SS or "
                                 "D-HH:MM:SS), got '" +
                                     x.time + "'");
                           }
                         }),
      VocabularyKey<S, Signal>("signal", &S::signal, {Signal::kUsr1, Signal::kUsr2, Signal::kTerm}),
      IntKey<S>("signal_lead_s", &S::signal_lead_s, 1, 65535),
      IntKey<S>("max_restarts", &S::max_restarts, 0),
      IntKey<S>("max_failures", &S::max_failures, 0),
      IntKey<S>("in_job_restarts", &S::in_job_restarts, 0, 100),
      EnumKey<S, bool>("release_requeue_hold", &S::release_requeue_hold,
                       {{"false", false}, {"true", true}}),
      FloatKey<S>("release_hold_after_s", &S::release_hold_after_s, 1.0, 3600.0),
      FloatKey<S>("preempt_grace_s", &S::preempt_grace_s, 0.0, 86400.0),
  };
  return keys;
}

// data.path: required, resolved against the config's folder, and (unless the filesystem is not
// this reader's concern) an existing folder.
void ReadDataPath(Section& s, DataSection& x) {
  Context& ctx = s.ctx();
  if (!s.String("path", &x.path, /*required=*/true)) return;
  const YAML::Node v = s.node()["path"];
  if (x.path.empty()) {
    ctx.Error(v, "data.path", "must name the dataset folder, got an empty value");
    return;
  }
  x.path = Resolve(ctx, x.path);
  std::error_code ec;
  if (ctx.options.check_filesystem && !fs::is_directory(x.path, ec)) {
    ctx.Error(v, "data.path", "no such dataset folder '" + x.path + "'");
  }
}

// data.batch_size, and against the dataset: a batch larger than the dataset would repeat
// episodes inside one batch.
void ReadBatchSize(Section& s, DataSection& x) {
  Context& ctx = s.ctx();
  const size_t errors_before = ctx.errors.size() + ctx.dropped;
  s.Int("batch_size", &x.batch_size, 1, 65536);
  std::error_code ec;
  if (!ctx.options.check_filesystem || ctx.errors.size() + ctx.dropped != errors_before ||
      x.path.empty() || !fs::is_directory(x.path, ec)) {
    return;
  }
  // A LeRobot folder also has a meta/episodes.jsonl, in another schema: the trainer's index
  // reader names it as such (exit 65, "import it first"), which says more than a count would.
  if (fs::exists(fs::path(x.path) / "meta" / "info.json", ec) &&
      fs::exists(fs::path(x.path) / "meta" / "tasks.jsonl", ec)) {
    return;
  }
  const std::string index = (fs::path(x.path) / "meta" / "episodes.jsonl").string();
  const Result<int64_t> episodes = CountEpisodes(index, x.batch_size);
  const YAML::Node batch = s.node()["batch_size"];
  if (!episodes.ok()) {
    ctx.Error(s.node()["path"], "data.path", episodes.status().message());
  } else if (episodes.value() >= 0 && x.batch_size > episodes.value()) {
    ctx.Error(batch ? batch : s.node()["path"], "data.batch_size",
              "value " + std::to_string(x.batch_size) + (batch ? "" : " (the default)") +
                  " exceeds the dataset's " + std::to_string(episodes.value()) + " episodes (" +
                  index + ")");
  }
}

const std::vector<ConfigKey<DataSection>>& DataKeys() {
  using S = DataSection;
  static const std::vector<ConfigKey<S>> keys = {
      CustomStringKey<S>("path", &S::path, ReadDataPath),
      {"batch_size", ReadBatchSize, [](YAML::Emitter& e, const S& x) { e << x.batch_size; }},
      IntKey<S>("pad_multiple", &S::pad_multiple, 1, 4096),
      IntKey<S>("pool_factor", &S::pool_factor, 1, 1 << 20),
      EnumKey<S, SamplerPlan>(
          "plan", &S::plan,
          {{"global", SamplerPlan::kGlobal}, {"per_rank", SamplerPlan::kPerRank}}),
      IntKey<S>("prefetch", &S::prefetch, 0, 1024),
  };
  return keys;
}

// model.init_from: resolved against the config's folder and (when the filesystem is this
// reader's concern) an existing folder; what it holds is checked by the trainer.
void ReadInitFrom(Section& s, ModelSection& x) {
  if (!s.String("init_from", &x.init_from) || x.init_from.empty()) return;
  x.init_from = Resolve(s.ctx(), x.init_from);
  std::error_code ec;
  if (s.ctx().options.check_filesystem && s.ctx().options.check_init_from &&
      !fs::is_directory(x.init_from, ec)) {
    s.ctx().Error(
        s.node()["init_from"], "model.init_from",
        "no such folder '" + x.init_from + "' (an upstream transformer/ folder or its parent)");
  }
}

const std::vector<ConfigKey<ModelSection>>& ModelKeys() {
  using S = ModelSection;
  static const std::vector<ConfigKey<S>> keys = {
      CustomStringKey<S>("init_from", &S::init_from, ReadInitFrom),
      IntKey<S>("dim", &S::dim, 1, 1 << 16),
      IntKey<S>("heads", &S::heads, 1, 1024),
      IntKey<S>("layers", &S::layers, 1, 1024),
      IntKey<S>("ffn_dim", &S::ffn_dim, 1, 1 << 20),
      IntKey<S>("freq_dim", &S::freq_dim, 2, 1 << 16),
      IntKey<S>("patch_size", &S::patch_size, 1, 64),
      FloatKey<S>("rope_theta", &S::rope_theta, 1.0),
      FloatKey<S>("eps", &S::eps, 0.0, 1.0, /*min_open=*/true),
  };
  return keys;
}

const std::vector<ConfigKey<ObjectiveSection>>& ObjectiveKeys() {
  using S = ObjectiveSection;
  static const std::vector<ConfigKey<S>> keys = {
      FloatKey<S>("video_shift", &S::video_shift, 0.0, kInf, /*min_open=*/true),
      FloatKey<S>("action_shift", &S::action_shift, 0.0, kInf, /*min_open=*/true),
      FloatKey<S>("clean_noise_prob", &S::clean_noise_prob, 0.0, 1.0),
      FloatKey<S>("video_loss_weight", &S::video_loss_weight, 0.0),
      FloatKey<S>("action_loss_weight", &S::action_loss_weight, 0.0),
      IntKey<S>("chunk_min", &S::chunk_min, 1, 4096),
      IntKey<S>("chunk_max", &S::chunk_max, 1, 4096),
      IntKey<S>("window_min", &S::window_min, 0, 1 << 20),
      IntKey<S>("window_max", &S::window_max, 0, 1 << 20),
      FloatKey<S>("text_dropout", &S::text_dropout, 0.0, 1.0),
  };
  return keys;
}

void ReadBetas(Section& s, OptimSection& x) {
  YAML::Node betas = s.Get("betas");
  if (!betas.IsDefined()) return;
  double b[2];
  if (!betas.IsSequence() || betas.size() != 2 || !ParseFloat(betas[0], &b[0]) ||
      !ParseFloat(betas[1], &b[1])) {
    s.ctx().Error(betas, "optim.betas",
                  "expected a list of two numbers [beta1, beta2], got " + Describe(betas));
  } else if (b[0] < 0 || b[0] >= 1 || b[1] < 0 || b[1] >= 1) {
    s.ctx().Error(betas, "optim.betas",
                  "values [" + betas[0].Scalar() + ", " + betas[1].Scalar() +
                      "] are out of range (each must be in [0, 1))");
  } else {
    x.betas = {b[0], b[1]};
  }
}

const std::vector<ConfigKey<OptimSection>>& OptimKeys() {
  using S = OptimSection;
  static const std::vector<ConfigKey<S>> keys = {
      FloatKey<S>("lr", &S::lr, 0.0, kInf, /*min_open=*/true),
      {"betas", ReadBetas,
       [](YAML::Emitter& e, const S& x) {
         e << YAML::Flow << YAML::BeginSeq << FormatDouble(x.betas[0]) << FormatDouble(x.betas[1])
           << YAML::EndSeq;
       }},
      FloatKey<S>("weight_decay", &S::weight_decay, 0.0),
      FloatKey<S>("eps", &S::eps, 0.0, kInf, /*min_open=*/true),
      FloatKey<S>("grad_clip", &S::grad_clip, 0.0),
      IntKey<S>("warmup_steps", &S::warmup_steps, 0),
      IntKey<S>("resume_warmup_steps", &S::resume_warmup_steps, 0),
      IntKey<S>("grad_accum", &S::grad_accum, 1, 1 << 20),
      VocabularyKey<S, ShardMode>("shard", &S::shard),
  };
  return keys;
}

const std::vector<ConfigKey<CheckpointSection>>& CheckpointKeys() {
  using S = CheckpointSection;
  static const std::vector<ConfigKey<S>> keys = {
      IntKey<S>("every", &S::every, 1),
      IntKey<S>("keep_last", &S::keep_last, 1),
      IntKey<S>("keep_every", &S::keep_every, 0),
      VocabularyKey<S, ExportDType>("export_dtype", &S::export_dtype),
      IntKey<S>("max_shard_bytes", &S::max_shard_bytes, 1),
      FloatKey<S>("write_gbps", &S::write_gbps, 0.0, 10000.0),
      EnumKey<S, bool>("async", &S::async, {{"false", false}, {"true", true}}),
  };
  return keys;
}

const std::vector<ConfigKey<TrainSection>>& TrainKeys() {
  using S = TrainSection;
  static const std::vector<ConfigKey<S>> keys = {
      VocabularyKey<S, DType>("dtype", &S::dtype),
      VocabularyKey<S, Device>("device", &S::device),
      IntKey<S>("log_every", &S::log_every, 1),
      IntKey<S>("profile", &S::profile, 0),
      IntKey<S>("max_nonfinite_steps", &S::max_nonfinite_steps, 1),
      VocabularyKey<S, ActivationCheckpointing>("activation_checkpointing",
                                                &S::activation_checkpointing),
      FloatKey<S>("device_peak_tflops", &S::device_peak_tflops, 0.0),
      EnumKey<S, bool>("deterministic", &S::deterministic, {{"false", false}, {"true", true}}),
      FloatKey<S>("hang_min_s", &S::hang_min_s, 1.0, 86400.0),
      FloatKey<S>("hang_factor", &S::hang_factor, 1.0, 1000.0),
      FloatKey<S>("first_step_timeout_s", &S::first_step_timeout_s, 1.0, 86400.0),
  };
  return keys;
}

void ReadRun(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "run");
  s.set_root_mark(root);
  ReadKeys(s, c.run, RunKeys());
  s.Finish();
}

void ReadSlurm(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "slurm");
  ReadKeys(s, c.slurm, SlurmKeys());
  s.Finish();
}

void ReadData(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "data");
  s.set_root_mark(root);
  ReadKeys(s, c.data, DataKeys());
  s.Finish();
}

void ReadModel(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "model");
  auto& x = c.model;
  ReadKeys(s, x, ModelKeys());
  s.Finish();
  if (s.present()) {
    for (const auto& k : ModelKeys()) {
      if (std::string(k.name) != "init_from" && s.node()[k.name]) x.given.push_back(k.name);
    }
  }
  if (x.dim % x.heads != 0) {
    ctx.Error(s.present() ? s.node() : root, "model.dim",
              "value " + std::to_string(x.dim) + " is not divisible by model.heads " +
                  std::to_string(x.heads));
  } else {
    const int64_t hd = x.dim / x.heads;
    // 3-axis RoPE splits the head into (hd - 4*(hd/6), 2*(hd/6), 2*(hd/6)) rotary pairs.
    if (hd % 2 != 0 || hd < 6) {
      ctx.Error(
          s.present() ? s.node() : root, "model.dim",
          "head size dim/heads = " + std::to_string(hd) + " must be even and >= 6 for 3-axis RoPE");
    }
  }
  if (x.freq_dim % 2 != 0) {
    ctx.Error(s.present() ? s.node() : root, "model.freq_dim",
              "value " + std::to_string(x.freq_dim) + " must be even (sin and cos halves)");
  }
}

void ReadObjective(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "objective");
  auto& x = c.objective;
  ReadKeys(s, x, ObjectiveKeys());
  s.Finish();
  const YAML::Node& at = s.present() ? s.node() : root;
  if (x.chunk_min > x.chunk_max) {
    ctx.Error(at, "objective.chunk_min",
              "value " + std::to_string(x.chunk_min) + " exceeds objective.chunk_max " +
                  std::to_string(x.chunk_max));
  }
  if (x.window_min > x.window_max) {
    ctx.Error(at, "objective.window_min",
              "value " + std::to_string(x.window_min) + " exceeds objective.window_max " +
                  std::to_string(x.window_max));
  }
}

void ReadOptim(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "optim");
  ReadKeys(s, c.optim, OptimKeys());
  s.Finish();
}

void ReadCheckpoint(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "checkpoint");
  ReadKeys(s, c.checkpoint, CheckpointKeys());
  s.Finish();
}

void ReadTrain(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "train");
  auto& x = c.train;
  ReadKeys(s, x, TrainKeys());
  s.Finish();
  if (x.device == Device::kCuda && ctx.options.cuda != RunConfigOptions::Cuda::kYes) {
    const YAML::Node v = s.node()["device"];
    if (ctx.options.cuda == RunConfigOptions::Cuda::kNo) {
      ctx.Error(v, "train.device",
                "value cuda needs a baton-train built with CUDA, and this one was built without "
                "(use cpu, or rebuild with -DBATON_CUDA=ON against a CUDA libtorch)");
    } else {
      c.warnings.push_back(ctx.Where(v) +
                           ": train.device: value cuda needs a baton-train built with CUDA "
                           "(-DBATON_CUDA=ON); the trainer checks this when the job starts");
    }
  }
}

const std::vector<std::string> kSections = {"run",       "slurm", "data",       "model",
                                            "objective", "optim", "checkpoint", "train"};

}  // namespace

Result<RunConfig> ParseRunConfig(const std::string& yaml_text, const std::string& source,
                                 const RunConfigOptions& options) {
  if (yaml_text.size() > static_cast<size_t>(kMaxRunConfigBytes)) {
    return Status::Config(source + ": " + std::to_string(yaml_text.size()) +
                          " bytes is too large for a run config (at most " +
                          std::to_string(kMaxRunConfigBytes) + " bytes)");
  }
  Context ctx;
  ctx.source = source;
  ctx.options = options;
  {
    std::error_code ec;
    fs::path p(source);
    ctx.anchor = p.has_parent_path() ? fs::absolute(p.parent_path(), ec) : fs::current_path(ec);
  }
  if (!CheckYamlStructure(ctx, yaml_text)) return ctx.ToStatus();
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Status::Config(MarkText(source, e.mark) + ": malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) {
    if (!ctx.errors.empty()) return ctx.ToStatus();  // a second document, named by line
    return Status::Config(source + ": expected a mapping with sections " +
                          "run, slurm, data, model, objective, optim, checkpoint, train; got " +
                          (root.IsNull() ? std::string("an empty file") : Describe(root)));
  }

  RunConfig c;
  c.source = source;
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(kSections.begin(), kSections.end(), key) == kSections.end()) {
        ctx.Error(kv.first, key,
                  "unknown section (known: run, slurm, data, model, objective, optim, "
                  "checkpoint, train)");
      }
    }
    ReadRun(ctx, root, c);
    ReadSlurm(ctx, root, c);
    ReadData(ctx, root, c);
    ReadModel(ctx, root, c);
    ReadObjective(ctx, root, c);
    ReadOptim(ctx, root, c);
    ReadCheckpoint(ctx, root, c);
    ReadTrain(ctx, root, c);
  } catch (const YAML::Exception& e) {
    ctx.Add(source + ": unreadable YAML structure: " + e.msg);
  }
  if (c.run.name.empty()) c.run.name = fs::path(source).stem().string();
  if (c.run.name.empty()) c.run.name = "run";

  if (!ctx.errors.empty()) return ctx.ToStatus();
  return c;
}

Result<RunConfig> LoadRunConfig(const std::string& path, const RunConfigOptions& options) {
  // Checked before opening: opening a FIFO blocks until a writer comes, and reading a device
  // or a huge file never ends in time.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Config(path + ": cannot read the config file (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Config(path + ": cannot read the config file: it is " + FileKind(st.st_mode) +
                          ", not a regular file");
  }
  auto too_large = [&](int64_t bytes) {
    return Status::Config(path + ": the config file is " + std::to_string(bytes) +
                          " bytes, more than a run config's limit of " +
                          std::to_string(kMaxRunConfigBytes) + " bytes (is it the right file?)");
  };
  if (st.st_size > kMaxRunConfigBytes) return too_large(st.st_size);
  std::string why;
  const int fd = OpenRegularFile(path, &why);
  if (fd < 0) return Status::Config(path + ": cannot read the config file: " + why);
  // One byte past the limit tells a file that grew after the stat from one at the limit.
  std::string text(static_cast<size_t>(kMaxRunConfigBytes) + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      return Status::Config(path + ": cannot read the config file: " + err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got > static_cast<size_t>(kMaxRunConfigBytes)) return too_large(static_cast<int64_t>(got));
  text.resize(got);
  return ParseRunConfig(text, path, options);
}

namespace {

template <class S>
void WriteSection(YAML::Emitter& e, const char* name, const S& x,
                  const std::vector<ConfigKey<S>>& keys) {
  e << YAML::Key << name << YAML::Value << YAML::BeginMap;
  for (const auto& k : keys) {
    e << YAML::Key << k.name << YAML::Value;
    k.write(e, x);
  }
  e << YAML::EndMap;
}

// With init_from, the sizes come from the folder's config.json: only the keys the user gave are
// written back (a frozen run.yaml must not turn defaults into demands the trainer checks).
void WriteModelSection(YAML::Emitter& e, const ModelSection& x) {
  e << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  for (const auto& k : ModelKeys()) {
    const std::string name = k.name;
    if (!x.init_from.empty() && name != "init_from" &&
        std::find(x.given.begin(), x.given.end(), name) == x.given.end()) {
      continue;
    }
    e << YAML::Key << k.name << YAML::Value;
    k.write(e, x);
  }
  e << YAML::EndMap;
}

}  // namespace

std::string ToYaml(const RunConfig& c) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  WriteSection(e, "run", c.run, RunKeys());
  WriteSection(e, "slurm", c.slurm, SlurmKeys());
  WriteSection(e, "data", c.data, DataKeys());
  WriteModelSection(e, c.model);
  WriteSection(e, "objective", c.objective, ObjectiveKeys());
  WriteSection(e, "optim", c.optim, OptimKeys());
  WriteSection(e, "checkpoint", c.checkpoint, CheckpointKeys());
  WriteSection(e, "train", c.train, TrainKeys());
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace baton
