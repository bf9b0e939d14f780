#include "schema/checkpoint_manifest.h"

#include <xxhash.h>
// After xxhash.h: XXH3 calls go to the widest SIMD variant this CPU has, chosen at run time.
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "schema/atomic_file.h"

namespace baton {
namespace fs = std::filesystem;

Result<std::string> HashFile(const std::string& path, uint64_t* bytes_out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::NotFound(path + ": missing");
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    XXH3_64bits_update(state, buf.data(), n);
    total += n;
  }
  const bool failed = std::ferror(f);
  std::fclose(f);
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  if (failed) return Status::Io(path + ": read failed while hashing");
  if (bytes_out) *bytes_out = total;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, h);
  return std::string(hex);
}

std::string OptimizerShardFile(int64_t rank, int64_t world) {
  char name[64];
  std::snprintf(name, sizeof(name), "optimizer-%05lld-of-%05lld.safetensors", (long long)(rank + 1),
                (long long)world);
  return name;
}

std::string MasterWeightsShardFile(int64_t rank, int64_t world) {
  char name[64];
  std::snprintf(name, sizeof(name), "master_weights-%05lld-of-%05lld.safetensors",
                (long long)(rank + 1), (long long)world);
  return name;
}

std::vector<std::string> RequiredFiles(const std::string& kind) {
  if (kind == "full") return {kWeightsFile, kModelConfigFile, kOptimizerFile, kStateFile};
  if (kind == "weights_only") return {kWeightsFile};
  return {};
}

Status WriteManifest(const std::string& dir, CheckpointManifest m,
                     const std::vector<std::string>& files) {
  m.files.clear();
  for (const auto& rel : files) {
    ManifestFile mf;
    mf.path = rel;
    auto h = HashFile((fs::path(dir) / rel).string(), &mf.bytes);
    if (!h.ok()) return h.status();
    mf.xxh3 = h.value();
    m.files.push_back(mf);
  }
  return WriteManifestListed(dir, m);
}

Status WriteManifestListed(const std::string& dir, const CheckpointManifest& m) {
  nlohmann::ordered_json j{{"format_version", m.format_version},
                           {"step", m.step},
                           {"kind", m.kind},
                           {"world_size", m.world_size},
                           {"config_hash", m.config_hash},
                           {"finite", m.finite},
                           {"files", nlohmann::ordered_json::array()}};
  for (const auto& f : m.files) {
    j["files"].push_back({{"path", f.path}, {"bytes", f.bytes}, {"xxh3", f.xxh3}});
  }
  return WriteTextAtomic((fs::path(dir) / kManifestName).string(), j.dump(2) + "\n");
}

Result<CheckpointManifest> ReadManifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / kManifestName).string();
  auto text = ReadFile(path);
  if (!text.ok()) {
    return Status::Data(dir + ": no " + kManifestName + " (the save did not finish)");
  }
  CheckpointManifest m;
  try {
    const auto j = nlohmann::json::parse(text.value());
    m.format_version = j.at("format_version").get<int>();
    m.step = j.at("step").get<int64_t>();
    m.kind = j.value("kind", "full");
    m.world_size = j.value("world_size", int64_t{1});
    m.config_hash = j.value("config_hash", "");
    m.finite = j.value("finite", false);
    for (const auto& f : j.at("files")) {
      m.files.push_back({f.at("path").get<std::string>(), f.at("bytes").get<uint64_t>(),
                         f.at("xxh3").get<std::string>()});
    }
  } catch (const std::exception& e) {
    return Status::Data(path + ": unreadable manifest: " + e.what());
  }
  return m;
}

namespace {

// A manifest path must name a file inside the checkpoint folder: relative, no "..", no ".".
bool InsideFolder(const std::string& rel) {
  if (rel.empty() || rel.front() == '/') return false;
  for (const auto& part : fs::path(rel)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

// A listed file must be the folder's own: no component of its path (the file, transformer/) may
// be a symbolic link, which could lead anywhere (another run's checkpoint, a file that changes
// under the run). The trainer never writes links. Returns the first link, "" when none.
std::string FirstSymlink(const std::string& dir, const std::string& rel) {
  fs::path at(dir);
  for (const auto& part : fs::path(rel)) {
    at /= part;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(at, ec))) return at.string();
  }
  return "";
}

// trainer_state.json's "step" must be the manifest's: a state file copied in from another save
// would otherwise resume the data position and LR of another step.
Status CheckStateStep(const std::string& dir, int64_t step) {
  const std::string path = (fs::path(dir) / kStateFile).string();
  auto text = ReadFile(path);
  if (!text.ok()) return Status::Data(path + ": unreadable: " + text.status().message());
  const auto j = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
    return Status::Data(path + ": no integer \"step\"");
  }
  if (j["step"].get<int64_t>() != step) {
    return Status::Data(path + ": step " + std::to_string(j["step"].get<int64_t>()) +
                        " differs from the manifest's step " + std::to_string(step));
  }
  return Status::Ok();
}

// Sharded weights or optimizer state: every shard the index's weight_map names is listed (and
// so checked).
Status CheckShardsListed(const std::string& dir, const std::string& index_file,
                         const std::set<std::string>& listed) {
  const std::string path = (fs::path(dir) / index_file).string();
  auto text = ReadFile(path);
  if (!text.ok()) return Status::Data(path + ": unreadable: " + text.status().message());
  const auto j = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    return Status::Data(path + ": no \"weight_map\" object");
  }
  for (const auto& [key, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      return Status::Data(path + ": weight_map['" + key + "'] is not a file name");
    const std::string rel =
        (fs::path(index_file).parent_path() / shard.get<std::string>()).lexically_normal().string();
    if (listed.count(rel) == 0) {
      return Status::Data(dir + ": shard " + rel + " (of tensor " + key +
                          ") is not listed in the manifest");
    }
  }
  return Status::Ok();
}

// The manifest's own fields: a format version this build reads, a known kind, and a step that is
// not negative and agrees with a checkpoint_step_<N> folder name.
Status CheckManifestFields(const std::string& dir, const CheckpointManifest& m) {
  if (m.format_version >= 1 && m.format_version < kCheckpointFormatVersion) {
    return Status::Data(dir + ": checkpoint format version " + std::to_string(m.format_version) +
                        " is older than this build's version " +
                        std::to_string(kCheckpointFormatVersion) +
                        " (parameters renamed to upstream's keys); convert it with "
                        "`baton-train ckpt upgrade " +
                        dir + "`");
  }
  if (m.format_version != kCheckpointFormatVersion) {
    return Status::Data(dir + ": checkpoint format version " + std::to_string(m.format_version) +
                        " is not known (this build reads version " +
                        std::to_string(kCheckpointFormatVersion) + ")");
  }
  if (RequiredFiles(m.kind).empty()) {
    return Status::Data(dir + ": manifest kind '" + m.kind +
                        "' is not known (full | weights_only)");
  }
  if (m.step < 0)
    return Status::Data(dir + ": manifest step " + std::to_string(m.step) + " is negative");
  const int64_t named_step = CheckpointStepFromName(fs::path(dir).filename().string());
  if (named_step >= 0 && named_step != m.step) {
    return Status::Data(dir + ": manifest step " + std::to_string(m.step) +
                        " differs from the folder name's " + std::to_string(named_step));
  }
  return Status::Ok();
}

// The manifest's paths, normalised; each must be inside the folder and listed once.
Result<std::set<std::string>> ListedPaths(const std::string& dir, const CheckpointManifest& m) {
  std::set<std::string> listed;
  for (const auto& f : m.files) {
    if (!InsideFolder(f.path)) {
      return Status::Data(dir + ": manifest lists '" + f.path +
                          "', which is not a path inside the folder");
    }
    if (!listed.insert(fs::path(f.path).lexically_normal().string()).second) {
      return Status::Data(dir + ": manifest lists '" + f.path + "' twice");
    }
  }
  return listed;
}

// Every file the kind needs is listed: the weights and the optimizer state either whole or as an
// index whose every shard is listed. Master weights are optional; when sharded, every shard the
// index names must be listed.
Status CheckRequiredListed(const std::string& dir, const std::string& kind,
                           const std::set<std::string>& listed) {
  if (listed.count(kMasterWeightsIndexFile) != 0) {
    if (Status st = CheckShardsListed(dir, kMasterWeightsIndexFile, listed); !st.ok()) return st;
  }
  for (const auto& r : RequiredFiles(kind)) {
    if (r == kWeightsFile && listed.count(r) == 0 && listed.count(kWeightsIndexFile) != 0) {
      if (Status st = CheckShardsListed(dir, kWeightsIndexFile, listed); !st.ok()) return st;
      continue;
    }
    if (r == kOptimizerFile && listed.count(r) == 0 && listed.count(kOptimizerIndexFile) != 0) {
      if (Status st = CheckShardsListed(dir, kOptimizerIndexFile, listed); !st.ok()) return st;
      continue;
    }
    if (listed.count(r) == 0) {
      return Status::Data(dir + ": a " + kind + " checkpoint needs " + r +
                          ", which the manifest does not list");
    }
  }
  return Status::Ok();
}

// One listed file: the folder's own (no link on its way), present, of the listed size and (when
// `check_hashes`) content hash.
Status CheckListedFile(const std::string& dir, const ManifestFile& f, bool check_hashes) {
  const std::string path = (fs::path(dir) / f.path).string();
  std::error_code ec;
  if (const std::string link = FirstSymlink(dir, f.path); !link.empty()) {
    return Status::Data(link + ": is a symbolic link (to " + fs::read_symlink(link, ec).string() +
                        "); a checkpoint's files must be its own, not links");
  }
  if (!fs::is_regular_file(path, ec))
    return Status::Data(path + ": listed in the manifest but missing");
  const auto size = fs::file_size(path, ec);
  if (ec) return Status::Data(path + ": listed in the manifest but missing");
  if (size != f.bytes) {
    return Status::Data(path + ": size " + std::to_string(size) + " differs from the manifest's " +
                        std::to_string(f.bytes) + " (truncated or rewritten)");
  }
  if (!check_hashes) return Status::Ok();
  auto h = HashFile(path);
  if (!h.ok()) return h.status();
  if (h.value() != f.xxh3) {
    return Status::Data(path + ": content hash " + h.value() + " differs from the manifest's " +
                        f.xxh3 + " (corrupted)");
  }
  return Status::Ok();
}

}  // namespace

Status VerifyCheckpoint(const std::string& dir, bool check_hashes) {
  if (const std::string link = FirstSymlink(dir, kManifestName); !link.empty()) {
    return Status::Data(link + ": is a symbolic link; a checkpoint's files must be its own");
  }
  auto m = ReadManifest(dir);
  if (!m.ok()) return m.status();
  if (Status st = CheckManifestFields(dir, *m); !st.ok()) return st;
  auto listed = ListedPaths(dir, *m);
  if (!listed.ok()) return listed.status();
  if (Status st = CheckRequiredListed(dir, m->kind, *listed); !st.ok()) return st;
  for (const auto& f : m->files) {
    if (Status st = CheckListedFile(dir, f, check_hashes); !st.ok()) return st;
  }
  if (m->kind == "full") return CheckStateStep(dir, m->step);
  return Status::Ok();
}

int64_t CheckpointStepFromName(const std::string& name) {
  static const std::regex kName("checkpoint_step_([0-9]{1,18})");
  std::smatch m;
  if (!std::regex_match(name, m, kName)) return -1;
  return std::stoll(m[1]);
}

std::vector<CheckpointEntry> ListCheckpoints(const std::string& checkpoints_dir,
                                             bool check_hashes) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(checkpoints_dir, ec)) {
    if (!e.is_directory()) continue;
    const int64_t step = CheckpointStepFromName(e.path().filename().string());
    if (step < 0) continue;
    CheckpointEntry c;
    c.path = e.path().string();
    c.step = step;
    const Status st = VerifyCheckpoint(c.path, check_hashes);
    c.valid = st.ok();
    c.problem = st.ok() ? "" : st.message();
    if (c.valid) {
      auto m = ReadManifest(c.path);
      c.finite = m.ok() && m->finite;
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step > b.step; });
  return out;
}

}  // namespace baton
