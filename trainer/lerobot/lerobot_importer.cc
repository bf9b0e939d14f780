#include "trainer/lerobot/lerobot_importer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "schema/atomic_file.h"
#include "schema/safetensors.h"
#include "trainer/data/dataset_index.h"
#include "trainer/lerobot/action_transform.h"
#include "schema/input_file.h"
#include "trainer/lerobot/latent_layout.h"
#include "trainer/lerobot/lerobot_meta.h"
#include "trainer/lerobot/pth_segment.h"
#include "trainer/parquet/parquet_file.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

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
  void Add(const std::string& x) {
    XXH3_64bits_update(s_, x.data(), x.size());
    XXH3_64bits_update(s_, "\n", 1);
  }
  std::string Hex() const { return Hex64(XXH3_64bits_digest(s_)); }

 private:
  XXH3_state_t* s_;
};

std::string ContentHash(const RawTensor& t) {
  std::string head = std::string(StDTypeName(t.dtype)) + ShapeString(t.shape);
  XXH128_hash_t h = XXH3_128bits(t.bytes.data(), t.bytes.size());
  const uint64_t salt = XXH3_64bits(head.data(), head.size());
  return Hex64(h.high64 ^ salt) + Hex64(h.low64);
}

struct Unit {
  const LeRobotDataset* ds;
  const LeRobotEpisode* ep;
  std::string id_prefix;  // <src name>/<relpath>
};

struct SegmentResult {
  std::optional<EpisodeMeta> meta;
  DatasetShape shape;
  bool reused = false;
  std::optional<ImportSkip> skip;
  int64_t bytes_read = 0, bytes_written = 0;
};

std::string FileNameFor(const std::string& id) {
  std::string f;
  for (char c : id) f += (c == '/' ? std::string("__") : std::string(1, c));
  return "episodes/" + f + ".safetensors";
}

int64_t SizeOf(const std::string& path) {
  std::error_code ec;
  const auto s = fs::file_size(path, ec);
  return ec ? 0 : int64_t(s);
}

// A count written by an earlier run into an episode's metadata: > 0, or nothing (re-import).
std::optional<int64_t> ParseCount(const std::string& s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1) return std::nullopt;
  return v;
}

// LeRobot's own check of an episode against info.json's fps: frame k's timestamp is k / fps after
// the first, within 1e-4 s (LeRobot's tolerance) plus two float32 roundings of the value.
std::optional<SegmentCheck> CheckTimestamps(const parquet::ParquetFile& file, double fps) {
  bool has = false;
  for (const auto& c : file.columns()) has = has || (c.name == "timestamp" && c.max_rep == 0);
  if (!has) return std::nullopt;
  auto col = file.ReadColumn("timestamp");
  if (!col.ok()) return SegmentCheck{"fps_mismatch", col.status().message()};
  const std::vector<double>& t = col->values;
  for (size_t k = 0; k < t.size(); ++k) {
    const double want = t[0] + double(k) / fps;
    if (!(std::fabs(t[k] - want) <= 1e-4 + 2.4e-7 * std::fabs(want))) {
      return SegmentCheck{"fps_mismatch", "timestamp of row " + std::to_string(k) + " is " +
                                              std::to_string(t[k]) + ", info.json's fps " +
                                              std::to_string(fps) + " puts it at " +
                                              std::to_string(want)};
    }
  }
  return std::nullopt;
}

// `inner` is `outer` or lies inside it (both absolute and normal).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  const fs::path rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

// The output folder's lock: one import writes into an --out at a time. Released by the kernel
// when the process ends, however it ends.
class OutputLock {
 public:
  ~OutputLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Take(const fs::path& out) {
    const std::string path = (out / kLockFile).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd_ < 0)
      return Status::Io(path + ": cannot create the import lock: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) {
        return Status::InvalidArgument(out.string() +
                                       " is being written by another import-lerobot (it holds " +
                                       path + "); wait for it to end, or choose another --out");
      }
      return Status::Io(path + ": cannot lock: " + std::strerror(errno));
    }
    return Status::Ok();
  }
  static constexpr const char* kLockFile = ".import-lerobot.lock";

 private:
  int fd_ = -1;
};

// Temp files of atomic writes ("<file>.tmp.<pid>") left by a killed import. Under the lock no
// other import writes here, so every one is stale.
void RemoveStaleTemps(const fs::path& out) {
  std::error_code ec;
  for (const char* sub : {"", "meta", "episodes", "texts"}) {
    const fs::path dir = out / sub;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const size_t at = name.rfind(".tmp.");
      if (at == std::string::npos || at + 5 == name.size() ||
          name.find_first_not_of("0123456789", at + 5) != std::string::npos) {
        continue;
      }
      std::error_code rm;
      if (it->is_regular_file(rm)) fs::remove(it->path(), rm);
    }
  }
}

}  // namespace

nlohmann::ordered_json ImportReport::ToJson() const {
  nlohmann::ordered_json skipped = nlohmann::ordered_json::object();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& s : skips) {
    skipped[s.check] = skipped.value(s.check, 0) + 1;
    list.push_back({{"id", s.id}, {"check", s.check}, {"reason", s.message}});
  }
  return {{"up_to_date", up_to_date},
          {"input_fingerprint", fingerprint},
          {"datasets", datasets},
          {"episodes", episodes},
          {"segments", segments},
          {"imported", imported},
          {"reused", reused},
          {"skipped", int64_t(skips.size())},
          {"skipped_by_check", skipped},
          {"skips", list},
          {"distinct_texts", distinct_texts},
          {"bytes_read", bytes_read},
          {"bytes_written", bytes_written}};
}

Result<ImportReport> ImportLeRobot(const ImportOptions& o, const ImportProfile& p) {
  ImportReport report;
  // 1. Find the sub-datasets, as upstream does: every meta/info.json under each source.
  std::vector<LeRobotDataset> datasets;
  std::vector<std::string> prefixes;
  std::error_code out_ec;
  const fs::path out_abs = fs::weakly_canonical(fs::absolute(o.out), out_ec);
  for (const std::string& src : o.srcs) {
    std::error_code ec;
    if (!fs::is_directory(src, ec)) return Status::Data(src + ": no such folder (--src)");
    // The import must never write into its own input (--overwrite would replace its metadata).
    const fs::path src_abs = fs::weakly_canonical(fs::absolute(src), ec);
    if (!out_ec && !ec && (IsWithin(out_abs, src_abs) || IsWithin(src_abs, out_abs))) {
      const char* how = out_abs == src_abs           ? "is"
                        : IsWithin(out_abs, src_abs) ? "lies inside"
                                                     : "contains";
      return Status::InvalidArgument("--out " + o.out + " " + how + " --src " + src +
                                     ": the import would write into its own input; choose an "
                                     "--out outside every --src");
    }
    const auto roots = FindLeRobotRoots(src);
    if (roots.empty())
      return Status::Data(src + ": no meta/info.json under it (not a LeRobot dataset)");
    fs::path base = fs::path(src).lexically_normal();
    if (base.filename().empty()) base = base.parent_path();
    for (const auto& root : roots) {
      auto ds = LoadLeRobotDataset(root);
      if (!ds.ok()) return ds.status();
      BATON_RETURN_IF_ERROR(CheckLeRobotTotals(ds.value()));
      datasets.push_back(std::move(ds).value());
      const std::string rel = fs::path(root).lexically_relative(base).generic_string();
      prefixes.push_back(base.filename().string() + (rel == "." ? "" : "/" + rel));
    }
  }
  std::vector<Unit> units;
  for (size_t d = 0; d < datasets.size(); ++d) {
    for (const auto& ep : datasets[d].episodes) units.push_back({&datasets[d], &ep, prefixes[d]});
  }
  report.datasets = int64_t(datasets.size());
  report.episodes = int64_t(units.size());

  const std::string empty_emb =
      o.empty_emb.empty() ? (fs::path(o.srcs.front()) / "empty_emb.pt").string() : o.empty_emb;

  // 2. The input fingerprint: what decides whether --out already holds this import.
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
  report.fingerprint = fp.Hex();

  // Read before --out is touched: a bad embedding leaves no trace there.
  auto empty = ReadPthTensor(empty_emb);
  if (!empty.ok()) {
    return Status::Data(
        empty.status().message() +
        " (the empty-prompt embedding; pass --empty-emb FILE if it lives elsewhere)");
  }
  if (empty->shape.size() != 2 || empty->shape[0] != p.text_len || empty->shape[1] < 1) {
    return Status::Data(empty_emb + ": empty-prompt embedding " + ShapeString(empty->shape) +
                        ", expected [" + std::to_string(p.text_len) + ", Dt]");
  }
  if (const int64_t bad = CountNonFinite(empty.value()); bad > 0) {
    return Status::Data(empty_emb + ": empty-prompt embedding holds " + std::to_string(bad) +
                        " NaN/Inf value(s)");
  }

  const fs::path out(o.out);
  const fs::path index_path = out / "meta" / "episodes.jsonl";
  const fs::path report_path = out / "meta" / "import_report.json";
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    return Status::InvalidArgument("--out " + o.out + " exists and is not a folder");
  }
  fs::create_directories(out, ec);
  if (ec) return Status::Io(o.out + ": cannot create: " + ec.message());
  OutputLock lock;
  BATON_RETURN_IF_ERROR(lock.Take(out));
  RemoveStaleTemps(out);
  if (fs::exists(index_path, ec)) {
    std::string previous;
    if (auto r = ReadRegularFile(report_path.string(), 64ull << 20); r.ok()) {
      try {
        const auto j = nlohmann::json::parse(r.value());
        if (j.value("input_fingerprint", "") == report.fingerprint) {
          ImportReport same;
          same.up_to_date = true;
          same.fingerprint = report.fingerprint;
          same.datasets = j.value("datasets", int64_t(0));
          same.episodes = j.value("episodes", int64_t(0));
          same.segments = j.value("segments", int64_t(0));
          same.imported = j.value("imported", int64_t(0)) + j.value("reused", int64_t(0));
          same.distinct_texts = j.value("distinct_texts", int64_t(0));
          for (const auto& s : j.value("skips", nlohmann::json::array())) {
            same.skips.push_back({s.value("id", ""), s.value("check", ""), s.value("reason", "")});
          }
          return same;
        }
      } catch (const nlohmann::json::exception&) {
      }
    }
    if (!o.overwrite) {
      return Status::InvalidArgument(o.out + " already holds a dataset from other inputs (" +
                                     index_path.string() + "); pass --overwrite to replace it");
    }
    // No index while the episodes are being replaced.
    fs::remove(index_path, ec);
  }
  fs::create_directories(out / "meta", ec);
  fs::create_directories(out / "episodes", ec);
  if (o.dedupe_text) fs::create_directories(out / "texts", ec);
  if (ec) return Status::Io(o.out + ": cannot create folders: " + ec.message());

  // 3. The segments, a worker per episode at a time.
  std::vector<std::vector<SegmentResult>> results(units.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu, text_mu;
  Status first_error;
  auto fail = [&](Status st) {
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.ok()) first_error = std::move(st);
    failed = true;
  };
  // One episode; `current` names the file in hand, for an exception's message.
  auto import_unit = [&](size_t u, std::string* current) {
    std::error_code ec;
    const Unit& unit = units[u];
    const LeRobotDataset& ds = *unit.ds;
    const LeRobotEpisode& ep = *unit.ep;
    const std::string parquet_path = ds.ParquetPath(ep.index);
    std::vector<SegmentResult>& res = results[u];
    res.resize(ep.segments.size());
    std::optional<parquet::ColumnData> action;  // read on the first segment that needs it
    std::optional<SegmentCheck> episode_check;
    for (size_t k = 0; k < ep.segments.size() && !failed; ++k) {
      const LeRobotSegment& seg = ep.segments[k];
      SegmentResult& r = res[k];
      const std::string id = unit.id_prefix + "/" + std::to_string(ep.index) + "_" +
                             std::to_string(seg.start) + "_" + std::to_string(seg.end);
      auto check_failed = [&](const SegmentCheck& c, const std::string& file) {
        if (o.skip_invalid) {
          r.skip = ImportSkip{id, c.check, file + ": " + c.message};
        } else {
          fail(Status::Data(file + ": segment " + id + ": " + c.check + ": " + c.message +
                            " (--skip-invalid counts such segments instead)"));
        }
      };
      std::vector<std::string> cams;
      std::string missing;
      for (const auto& cam : p.obs_cam_keys) {
        cams.push_back(ds.LatentPath(ep.index, cam, seg.start, seg.end));
        if (!fs::exists(cams.back(), ec) && missing.empty()) missing = cams.back();
      }
      if (!missing.empty()) {  // upstream drops these silently; baton counts them
        r.skip = ImportSkip{id, "missing_camera", missing + ": no such latent file"};
        continue;
      }
      // An episode file from an earlier run on the same inputs is kept.
      Hasher src;
      src.Add(kFingerprintTag);
      src.Add(p.text);
      src.Add(FileStamp(parquet_path));
      // The episode-level facts its checks used: a changed length re-imports (and re-checks).
      src.Add("length " + std::to_string(ep.length));
      for (const auto& c : cams) src.Add(FileStamp(c));
      src.Add(o.dedupe_text ? "dedupe" : "inline");
      const std::string source = src.Hex();
      EpisodeMeta meta;
      meta.id = id;
      meta.file = FileNameFor(id);
      const std::string episode_path = (out / meta.file).string();
      if (fs::exists(episode_path, ec)) {
        *current = episode_path;
        auto old = SafetensorsFile::Open(episode_path);
        if (old.ok()) {
          const auto& md = old.value()->metadata();
          auto get = [&](const char* key) {
            auto it = md.find(key);
            return it == md.end() ? std::string() : it->second;
          };
          const StTensorInfo* lat = old.value()->Find("latents");
          const StTensorInfo* act = old.value()->Find("actions");
          const std::string text_file = get("text_file");
          // Anything unexpected in the earlier file (a bad count, a foreign text path): it is
          // imported again rather than trusted.
          const auto n_video = ParseCount(get("n_video"));
          const auto text_len = ParseCount(get("text_len"));
          const auto text_dim = ParseCount(get("text_dim"));
          const bool text_ok = text_file.empty() || (text_file.rfind("texts/", 0) == 0 &&
                                                     text_file.find("..") == std::string::npos &&
                                                     fs::is_regular_file(out / text_file, ec));
          if (get("source") == source && lat && act && lat->shape.size() == 4 &&
              act->shape.size() == 3 && n_video && text_len && text_dim && text_ok) {
            meta.n_video = *n_video;
            meta.frames = EpisodeLatentFrames(meta.n_video);
            meta.text = text_file;
            r.shape = {lat->shape[0], lat->shape[2], lat->shape[3], act->shape[0],
                       act->shape[2], *text_len,     *text_dim};
            r.meta = meta;
            r.reused = true;
            continue;
          }
        }
      }
      if (!action) {
        *current = parquet_path;
        if (Status st = CheckRegularFile(parquet_path); !st.ok()) {
          return fail(st.code() == Code::kNotFound ? Status::Data(st.message()) : st);
        }
        auto file = parquet::ParquetFile::Open(parquet_path);
        if (!file.ok()) return fail(file.status());
        auto col = file->ReadColumn("action");
        if (!col.ok()) return fail(col.status());
        if (col->Width() < 0) {
          return fail(Status::Data(parquet_path + ": column 'action': rows of different widths"));
        }
        r.bytes_read += SizeOf(parquet_path);
        action = std::move(col).value();
        if (action->rows() != ep.length) {
          episode_check =
              SegmentCheck{"length_mismatch",
                           "episodes.jsonl says length " + std::to_string(ep.length) +
                               ", the parquet holds " + std::to_string(action->rows()) + " rows"};
        } else if (auto c = CheckTimestamps(*file, ds.fps); c) {
          episode_check = c;
        }
      }
      if (episode_check) {
        check_failed(*episode_check, parquet_path);
        continue;
      }
      std::vector<PthSegment> latents;
      std::optional<size_t> nonfinite;
      for (size_t c = 0; c < cams.size(); ++c) {
        *current = cams[c];
        auto s = ReadPthSegment(cams[c], c == 0);
        if (!s.ok()) {
          return fail(s.status().code() == Code::kNotFound ? Status::Data(s.status().message())
                                                           : s.status());
        }
        r.bytes_read += SizeOf(cams[c]);
        latents.push_back(std::move(s).value());
        if (!nonfinite && CountNonFinite(latents.back().latent) > 0) nonfinite = c;
      }
      if (nonfinite) {
        check_failed(
            {"nonfinite_latent", "key 'latent' holds " +
                                     std::to_string(CountNonFinite(latents[*nonfinite].latent)) +
                                     " NaN/Inf value(s)"},
            cams[*nonfinite]);
        continue;
      }
      const PthSegment& first = latents.front();
      const RawTensor& text = first.text_emb;
      if (text.shape.size() != 2 || text.shape[0] != p.text_len || text.shape[1] < 1) {
        check_failed({"text_shape", "text_emb " + ShapeString(text.shape) + ", expected [" +
                                        std::to_string(p.text_len) + ", Tx]"},
                     cams[0]);
        continue;
      }
      if (const int64_t bad = CountNonFinite(text); bad > 0) {
        check_failed(
            {"nonfinite_text", "key 'text_emb' holds " + std::to_string(bad) + " NaN/Inf value(s)"},
            cams[0]);
        continue;
      }
      int64_t F = 0, stride = 0;
      SegmentCheck c;
      if (!CheckFrameIds(p, first.frame_ids, seg.start, seg.end, &F, &stride, &c)) {
        check_failed(c, cams[0]);
        continue;
      }
      if (first.latent_num_frames != F) {
        check_failed({"latent_frames_mismatch",
                      "latent_num_frames " + std::to_string(first.latent_num_frames) +
                          " differs from F = (len(frame_ids) - 1) // 4 + 1 = " + std::to_string(F)},
                     cams[0]);
        continue;
      }
      RawTensor video;
      if (!LayoutLatents(p, latents, &video, &c)) {
        check_failed(c, cams[0]);
        continue;
      }
      SegmentActions acts;
      if (!TransformActions(p, action->values, action->rows(), action->Width(), seg.start, seg.end,
                            first.frame_ids, &acts, &c)) {
        check_failed(c, parquet_path);
        continue;
      }
      meta.n_video = int64_t(first.frame_ids.size());
      meta.frames = F;
      std::vector<StTensorRef> tensors{
          {"latents", video.dtype, video.shape, video.bytes.data()},
          {"actions", StDType::kF32, {p.action_dim, F, acts.steps}, acts.actions.data()},
          {"actions_mask", StDType::kF32, {p.action_dim, F, acts.steps}, acts.mask.data()}};
      if (o.dedupe_text) {
        meta.text = "texts/" + ContentHash(text) + ".safetensors";
        const std::string text_path = (out / meta.text).string();
        // Content-addressed and written atomically: a file that exists is complete. One writer
        // at a time: two workers with the same prompt would share the temp file's name.
        std::lock_guard<std::mutex> lock(text_mu);
        if (!fs::exists(text_path, ec)) {
          const Status st =
              WriteSafetensors(text_path, {{"text", text.dtype, text.shape, text.bytes.data()}});
          if (!st.ok()) return fail(st);
          r.bytes_written += SizeOf(text_path);
        }
      } else {
        tensors.push_back({"text", text.dtype, text.shape, text.bytes.data()});
      }
      *current = episode_path;
      const Status st = WriteSafetensors(episode_path, tensors,
                                         {{"id", id},
                                          {"source", source},
                                          {"n_video", std::to_string(meta.n_video)},
                                          {"text_file", meta.text},
                                          {"text_len", std::to_string(text.shape[0])},
                                          {"text_dim", std::to_string(text.shape[1])},
                                          {"frame_start", std::to_string(seg.start)},
                                          {"frame_end", std::to_string(seg.end)}});
      if (!st.ok()) return fail(st);
      r.bytes_written += SizeOf(episode_path);
      r.shape = {video.shape[0], video.shape[2], video.shape[3], p.action_dim,
                 acts.steps,     text.shape[0],  text.shape[1]};
      r.meta = meta;
    }
  };
  auto work = [&] {
    while (!failed) {
      const size_t u = next++;
      if (u >= units.size()) return;
      std::string current = units[u].ds->ParquetPath(units[u].ep->index);
      // Errors cross the pool as values: an exception escaping a thread would end the process.
      try {
        import_unit(u, &current);
      } catch (const std::bad_alloc&) {
        fail(Status::Internal(current + ": out of memory while importing it"));
      } catch (const std::exception& e) {
        fail(Status::Internal(current + ": " + e.what()));
      }
    }
  };
  const size_t workers =
      std::min(size_t(std::max(1, o.workers)), std::max<size_t>(1, units.size()));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads: the ones there do the work
      break;
    }
  }
  work();
  for (auto& t : pool) t.join();
  if (!first_error.ok()) return first_error;

  // 4. One shape for the whole dataset; then the metadata, the index last.
  std::optional<DatasetShape> shape;
  std::string shape_from;
  std::string index_text;
  std::set<std::string> ids, texts;
  for (const auto& res : results) {
    for (const auto& r : res) {
      ++report.segments;
      report.bytes_read += r.bytes_read;
      report.bytes_written += r.bytes_written;
      if (r.skip) {
        report.skips.push_back(*r.skip);
        continue;
      }
      if (!r.meta) continue;
      if (!ids.insert(r.meta->id).second) {
        return Status::Data("two segments import as episode '" + r.meta->id +
                            "' (two --src folders with the same name?)");
      }
      if (!shape) {
        shape = r.shape;
        shape_from = r.meta->id;
      } else if (!(*shape == r.shape)) {
        return Status::Data("layout_mismatch: segment " + r.meta->id + " has " +
                            r.shape.ToString() + ", segment " + shape_from + " has " +
                            shape->ToString() + " (one dataset holds one size)");
      }
      if (!r.meta->text.empty()) texts.insert(r.meta->text);
      ++(r.reused ? report.reused : report.imported);
      index_text += EpisodeMetaJson(*r.meta) + "\n";
    }
  }
  report.distinct_texts = o.dedupe_text ? int64_t(texts.size()) : report.imported + report.reused;
  if (!shape) {
    return Status::Data("no segment imported from " + o.srcs.front() + " (" +
                        std::to_string(report.skips.size()) + " skipped; see the report's skips)");
  }
  if (empty->shape[1] != shape->text_dim) {
    return Status::Data(empty_emb + ": empty-prompt embedding " + ShapeString(empty->shape) +
                        " differs from the segments' text [" + std::to_string(shape->text_len) +
                        ", " + std::to_string(shape->text_dim) + "]");
  }
  const std::string empty_path = (out / "meta" / "empty_text.safetensors").string();
  BATON_RETURN_IF_ERROR(
      WriteSafetensors(empty_path, {{"text", empty->dtype, empty->shape, empty->bytes.data()}}));
  report.bytes_written += SizeOf(empty_path);
  BATON_RETURN_IF_ERROR(WriteTextAtomic((out / "meta" / "info.json").string(),
                                        DatasetShapeJson(*shape, kDatasetFormatVersion)));
  nlohmann::ordered_json rj = report.ToJson();
  nlohmann::ordered_json prov{
      {"profile", p.name},
      {"env_type", p.layout == CameraLayout::kRobotwinTShape ? "robotwin_tshape" : "concat_w"},
      {"obs_cam_keys", p.obs_cam_keys},
      {"used_action_channel_ids", p.used_action_channel_ids},
      {"action_dim", p.action_dim},
      {"action_per_frame", p.action_per_frame},
      {"relative_pose_columns", p.relative_pose_columns},
      {"q01", p.q01},
      {"q99", p.q99},
      {"sources", o.srcs},
      {"empty_emb", empty_emb}};
  rj["provenance"] = prov;
  BATON_RETURN_IF_ERROR(WriteTextAtomic(report_path.string(), rj.dump(2) + "\n"));
  BATON_RETURN_IF_ERROR(WriteTextAtomic(index_path.string(), index_text));
  return report;
}

}  // namespace baton
