#include "trainer/lerobot/import_fingerprint.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "schema/safetensors.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// Changes when the importer's output for the same inputs would change.
constexpr const char* kFingerprintTag = "baton-import-lerobot 1";

std::string Hex64(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, h);
  return hex;
}

// Identity of a file without reading it: what an input fingerprint changes with.
std::string FileStamp(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return path + " missing";
  const auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  return path + " " + std::to_string(size) + " " + std::to_string(mtime);
}

class Hasher {
 public:
  Hasher() : s_(XXH3_createState()) { XXH3_64bits_reset(s_); }
  ~Hasher() { XXH3_freeState(s_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void Add(const std::string& x) {
    XXH3_64bits_update(s_, x.data(), x.size());
    XXH3_64bits_update(s_, "\n", 1);  // a separator, so ("ab","c") and ("a","bc") differ
  }
  std::string Hex() const { return Hex64(XXH3_64bits_digest(s_)); }

 private:
  XXH3_state_t* s_;
};

}  // namespace

std::string InputFingerprint(const ImportOptions& o, const ImportProfile& p,
                             const std::vector<LeRobotDataset>& datasets,
                             const std::vector<ImportUnit>& units, const std::string& empty_emb) {
  Hasher fp;
  fp.Add(kFingerprintTag);
  fp.Add(p.text);
  fp.Add(FileStamp(empty_emb));
  fp.Add(std::string("skip_invalid ") + (o.skip_invalid ? "1" : "0") + " dedupe " +
         (o.dedupe_text ? "1" : "0"));
  for (const auto& ds : datasets) {
    fp.Add(FileStamp((fs::path(ds.root) / "meta" / "info.json").string()));
    fp.Add(FileStamp((fs::path(ds.root) / "meta" / "episodes.jsonl").string()));
  }
  for (const auto& u : units) {
    fp.Add(FileStamp(u.ds->ParquetPath(u.ep->index)));
    for (const auto& s : u.ep->segments) {
      for (const auto& cam : p.obs_cam_keys)
        fp.Add(FileStamp(u.ds->LatentPath(u.ep->index, cam, s.start, s.end)));
    }
  }
  return fp.Hex();
}

std::string SegmentSourceHash(const ImportOptions& o, const ImportProfile& p,
                              const std::string& parquet_path, int64_t episode_length,
                              const std::vector<std::string>& cams) {
  Hasher src;
  src.Add(kFingerprintTag);
  src.Add(p.text);
  src.Add(FileStamp(parquet_path));
  // The episode-level facts its checks used: a changed length re-imports (and re-checks).
  src.Add("length " + std::to_string(episode_length));
  for (const auto& c : cams) src.Add(FileStamp(c));
  src.Add(o.dedupe_text ? "dedupe" : "inline");
  return src.Hex();
}

std::string ContentHash(const RawTensor& t) {
  std::string head = std::string(StDTypeName(t.dtype)) + ShapeString(t.shape);
  XXH128_hash_t h = XXH3_128bits(t.bytes.data(), t.bytes.size());
  const uint64_t salt = XXH3_64bits(head.data(), head.size());
  return Hex64(h.high64 ^ salt) + Hex64(h.low64);
}

}  // namespace baton
