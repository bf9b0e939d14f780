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
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace baton {
namespace fs = std::filesystem;

const char* SamplerPlanName(SamplerPlan plan) {
  return plan == SamplerPlan::kGlobal ? "global" : "per_rank";
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kBFloat16: return "bfloat16";
  }
  return "?";
}

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
  Section(Context& ctx, const YAML::Node& root, std::string name) : ctx_(ctx), name_(std::move(name)) {
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

  void Int(const char* key, int64_t* out, int64_t min, int64_t max = kMaxInt, bool required = false) {
    YAML::Node v = Get(key, required);
    if (!v.IsDefined()) return;
    int64_t x = 0;
    if (!ParseInt(v, &x)) {
      ctx_.Error(v, Key(key), "expected an integer, got " + Describe(v) + StringNumberHint(v));
    } else if (x < min || x > max) {
      const std::string range = max == kMaxInt ? ">= " + std::to_string(min)
                                               : "in [" + std::to_string(min) + ", " +
                                                     std::to_string(max) + "]";
      ctx_.Error(v, Key(key), "value " + std::to_string(x) + " is out of range (must be " + range + ")");
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
      ctx_.Error(v, Key(key), "value " + v.Scalar() + " is out of range (must be " +
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

// "a FIFO", "a folder", ... for a file that is not a regular one.
std::string FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
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

void ReadRun(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "run");
  s.set_root_mark(root);
  if (s.String("name", &c.run.name)) {
    static const std::regex kName("[^\\x00-\\x1f\\x7f]{1,128}");
    if (!std::regex_match(c.run.name, kName)) {
      ctx.Error(s.node()["name"], "run.name",
                "must be 1-128 characters without control characters, got '" + c.run.name + "'");
    }
  }
  if (s.String("dir", &c.run.dir)) c.run.dir = Resolve(ctx, c.run.dir);
  s.Int("steps", &c.run.steps, 1, kMaxInt, /*required=*/true);
  s.Int("seed", &c.run.seed, 0);
  s.Finish();
}

void ReadSlurm(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "slurm");
  auto& x = c.slurm;
  s.String("partition", &x.partition);
  s.String("qos", &x.qos);
  s.String("account", &x.account);
  s.Int("nodes", &x.nodes, 1);
  s.Int("ntasks_per_node", &x.ntasks_per_node, 1, 1024);
  s.Int("gpus_per_node", &x.gpus_per_node, 0, 64);
  s.Int("cpus_per_task", &x.cpus_per_task, 1, 4096);
  if (s.String("time", &x.time) && !ValidSlurmTime(x.time)) {
    ctx.Error(s.node()["time"], "slurm.time",
              "expected a SLURM time limit (minutes, MM:SS, HH:MM:SS or D-HH:MM:SS), got '" +
                  x.time + "'");
  }
  s.Enum<std::string>("signal", &x.signal, {{"USR1", "USR1"}, {"USR2", "USR2"}, {"TERM", "TERM"}});
  s.Int("signal_lead_s", &x.signal_lead_s, 1, 65535);
  s.Int("max_restarts", &x.max_restarts, 0);
  s.Int("max_failures", &x.max_failures, 0);
  s.Finish();
}

void ReadData(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "data");
  s.set_root_mark(root);
  auto& x = c.data;
  bool dataset_found = false;
  if (s.String("path", &x.path, /*required=*/true)) {
    const YAML::Node v = s.node()["path"];
    if (x.path.empty()) {
      ctx.Error(v, "data.path", "must name the dataset folder, got an empty value");
    } else {
      x.path = Resolve(ctx, x.path);
      std::error_code ec;
      if (!ctx.options.check_filesystem) {
        // a frozen config read back: the dataset is not this reader's concern
      } else if (!fs::is_directory(x.path, ec)) {
        ctx.Error(v, "data.path", "no such dataset folder '" + x.path + "'");
      } else {
        dataset_found = true;
      }
    }
  }
  const size_t errors_before = ctx.errors.size() + ctx.dropped;
  s.Int("batch_size", &x.batch_size, 1, 65536);
  if (dataset_found && ctx.errors.size() + ctx.dropped == errors_before) {
    // A batch larger than the dataset would repeat episodes inside one batch.
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
  s.Int("pad_multiple", &x.pad_multiple, 1, 4096);
  s.Int("pool_factor", &x.pool_factor, 1, 1 << 20);
  s.Enum<SamplerPlan>("plan", &x.plan,
                      {{"global", SamplerPlan::kGlobal}, {"per_rank", SamplerPlan::kPerRank}});
  s.Int("prefetch", &x.prefetch, 0, 1024);
  s.Finish();
}

void ReadModel(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "model");
  auto& x = c.model;
  s.Int("dim", &x.dim, 1, 1 << 16);
  s.Int("heads", &x.heads, 1, 1024);
  s.Int("layers", &x.layers, 1, 1024);
  s.Int("ffn_dim", &x.ffn_dim, 1, 1 << 20);
  s.Int("freq_dim", &x.freq_dim, 2, 1 << 16);
  s.Int("patch_size", &x.patch_size, 1, 64);
  s.Float("rope_theta", &x.rope_theta, 1.0);
  s.Float("eps", &x.eps, 0.0, 1.0, /*min_open=*/true);
  s.Finish();
  if (x.dim % x.heads != 0) {
    ctx.Error(s.present() ? s.node() : root, "model.dim",
              "value " + std::to_string(x.dim) + " is not divisible by model.heads " +
                  std::to_string(x.heads));
  } else {
    const int64_t hd = x.dim / x.heads;
    // 3-axis RoPE splits the head into (hd - 4*(hd/6), 2*(hd/6), 2*(hd/6)) rotary pairs.
    if (hd % 2 != 0 || hd < 6) {
      ctx.Error(s.present() ? s.node() : root, "model.dim",
                "head size dim/heads = " + std::to_string(hd) +
                    " must be even and >= 6 for 3-axis RoPE");
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
  s.Float("video_shift", &x.video_shift, 0.0, kInf, /*min_open=*/true);
  s.Float("action_shift", &x.action_shift, 0.0, kInf, /*min_open=*/true);
  s.Float("clean_noise_prob", &x.clean_noise_prob, 0.0, 1.0);
  s.Float("video_loss_weight", &x.video_loss_weight, 0.0);
  s.Float("action_loss_weight", &x.action_loss_weight, 0.0);
  s.Int("chunk_min", &x.chunk_min, 1, 4096);
  s.Int("chunk_max", &x.chunk_max, 1, 4096);
  s.Int("window_min", &x.window_min, 0, 1 << 20);
  s.Int("window_max", &x.window_max, 0, 1 << 20);
  s.Finish();
  const YAML::Node& at = s.present() ? s.node() : root;
  if (x.chunk_min > x.chunk_max) {
    ctx.Error(at, "objective.chunk_min", "value " + std::to_string(x.chunk_min) +
                                             " exceeds objective.chunk_max " +
                                             std::to_string(x.chunk_max));
  }
  if (x.window_min > x.window_max) {
    ctx.Error(at, "objective.window_min", "value " + std::to_string(x.window_min) +
                                              " exceeds objective.window_max " +
                                              std::to_string(x.window_max));
  }
}

void ReadOptim(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "optim");
  auto& x = c.optim;
  s.Float("lr", &x.lr, 0.0, kInf, /*min_open=*/true);
  YAML::Node betas = s.Get("betas");
  if (betas.IsDefined()) {
    double b[2];
    if (!betas.IsSequence() || betas.size() != 2 || !ParseFloat(betas[0], &b[0]) ||
        !ParseFloat(betas[1], &b[1])) {
      ctx.Error(betas, "optim.betas", "expected a list of two numbers [beta1, beta2], got " +
                                          Describe(betas));
    } else if (b[0] < 0 || b[0] >= 1 || b[1] < 0 || b[1] >= 1) {
      ctx.Error(betas, "optim.betas",
                "values [" + betas[0].Scalar() + ", " + betas[1].Scalar() +
                    "] are out of range (each must be in [0, 1))");
    } else {
      x.betas = {b[0], b[1]};
    }
  }
  s.Float("weight_decay", &x.weight_decay, 0.0);
  s.Float("eps", &x.eps, 0.0, kInf, /*min_open=*/true);
  s.Float("grad_clip", &x.grad_clip, 0.0);
  s.Int("warmup_steps", &x.warmup_steps, 0);
  s.Int("resume_warmup_steps", &x.resume_warmup_steps, 0);
  s.Int("grad_accum", &x.grad_accum, 1, 1 << 20);
  s.Finish();
}

void ReadCheckpoint(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "checkpoint");
  s.Int("every", &c.checkpoint.every, 1);
  s.Int("keep_last", &c.checkpoint.keep_last, 1);
  s.Int("keep_every", &c.checkpoint.keep_every, 0);
  s.Finish();
}

void ReadTrain(Context& ctx, const YAML::Node& root, RunConfig& c) {
  Section s(ctx, root, "train");
  auto& x = c.train;
  s.Enum<DType>("dtype", &x.dtype,
                {{"float32", DType::kFloat32}, {"float64", DType::kFloat64},
                 {"bfloat16", DType::kBFloat16}});
  s.Enum<std::string>("device", &x.device, {{"cpu", "cpu"}, {"cuda", "cuda"}});
  s.Int("log_every", &x.log_every, 1);
  s.Int("profile", &x.profile, 0);
  s.Int("max_nonfinite_steps", &x.max_nonfinite_steps, 1);
  s.Finish();
  if (x.device == "cuda" && ctx.options.cuda != RunConfigOptions::Cuda::kYes) {
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

const std::vector<std::string> kSections = {"run",   "slurm", "data",       "model", "objective",
                                            "optim", "checkpoint", "train"};

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

std::string ToYaml(const RunConfig& c) {
  YAML::Emitter e;
  auto kv = [&](const char* k, const std::string& v) { e << YAML::Key << k << YAML::Value << v; };
  auto ki = [&](const char* k, int64_t v) { e << YAML::Key << k << YAML::Value << v; };
  auto kd = [&](const char* k, double v) {
    e << YAML::Key << k << YAML::Value << FormatDouble(v);
  };
  auto section = [&](const char* name) { e << YAML::Key << name << YAML::Value << YAML::BeginMap; };

  e << YAML::BeginMap;
  section("run");
  kv("name", c.run.name);
  kv("dir", c.run.dir);
  ki("steps", c.run.steps);
  ki("seed", c.run.seed);
  e << YAML::EndMap;

  section("slurm");
  kv("partition", c.slurm.partition);
  kv("qos", c.slurm.qos);
  kv("account", c.slurm.account);
  ki("nodes", c.slurm.nodes);
  ki("ntasks_per_node", c.slurm.ntasks_per_node);
  ki("gpus_per_node", c.slurm.gpus_per_node);
  ki("cpus_per_task", c.slurm.cpus_per_task);
  kv("time", c.slurm.time);
  kv("signal", c.slurm.signal);
  ki("signal_lead_s", c.slurm.signal_lead_s);
  ki("max_restarts", c.slurm.max_restarts);
  ki("max_failures", c.slurm.max_failures);
  e << YAML::EndMap;

  section("data");
  kv("path", c.data.path);
  ki("batch_size", c.data.batch_size);
  ki("pad_multiple", c.data.pad_multiple);
  ki("pool_factor", c.data.pool_factor);
  kv("plan", SamplerPlanName(c.data.plan));
  ki("prefetch", c.data.prefetch);
  e << YAML::EndMap;

  section("model");
  ki("dim", c.model.dim);
  ki("heads", c.model.heads);
  ki("layers", c.model.layers);
  ki("ffn_dim", c.model.ffn_dim);
  ki("freq_dim", c.model.freq_dim);
  ki("patch_size", c.model.patch_size);
  kd("rope_theta", c.model.rope_theta);
  kd("eps", c.model.eps);
  e << YAML::EndMap;

  section("objective");
  kd("video_shift", c.objective.video_shift);
  kd("action_shift", c.objective.action_shift);
  kd("clean_noise_prob", c.objective.clean_noise_prob);
  kd("video_loss_weight", c.objective.video_loss_weight);
  kd("action_loss_weight", c.objective.action_loss_weight);
  ki("chunk_min", c.objective.chunk_min);
  ki("chunk_max", c.objective.chunk_max);
  ki("window_min", c.objective.window_min);
  ki("window_max", c.objective.window_max);
  e << YAML::EndMap;

  section("optim");
  kd("lr", c.optim.lr);
  e << YAML::Key << "betas" << YAML::Value << YAML::Flow << YAML::BeginSeq
    << FormatDouble(c.optim.betas[0]) << FormatDouble(c.optim.betas[1]) << YAML::EndSeq;
  kd("weight_decay", c.optim.weight_decay);
  kd("eps", c.optim.eps);
  kd("grad_clip", c.optim.grad_clip);
  ki("warmup_steps", c.optim.warmup_steps);
  ki("resume_warmup_steps", c.optim.resume_warmup_steps);
  ki("grad_accum", c.optim.grad_accum);
  e << YAML::EndMap;

  section("checkpoint");
  ki("every", c.checkpoint.every);
  ki("keep_last", c.checkpoint.keep_last);
  ki("keep_every", c.checkpoint.keep_every);
  e << YAML::EndMap;

  section("train");
  kv("dtype", DTypeName(c.train.dtype));
  kv("device", c.train.device);
  ki("log_every", c.train.log_every);
  ki("profile", c.train.profile);
  ki("max_nonfinite_steps", c.train.max_nonfinite_steps);
  e << YAML::EndMap;

  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace baton
