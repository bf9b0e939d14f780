#include "trainer/lerobot/import_output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "schema/atomic_file.h"
#include "schema/input_file.h"
#include "schema/safetensors.h"
#include "trainer/data/dataset_index.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

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

// The report an earlier import left in --out, when it is of the same inputs.
std::optional<ImportReport> SameImport(const fs::path& report_path,
                                       const std::string& fingerprint) {
  auto r = ReadRegularFile(report_path.string(), 64ull << 20);
  if (!r.ok()) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(r.value());
    if (j.value("input_fingerprint", "") != fingerprint) return std::nullopt;
    ImportReport same;
    same.up_to_date = true;
    same.fingerprint = fingerprint;
    same.datasets = j.value("datasets", int64_t(0));
    same.episodes = j.value("episodes", int64_t(0));
    same.segments = j.value("segments", int64_t(0));
    same.imported = j.value("imported", int64_t(0)) + j.value("reused", int64_t(0));
    same.distinct_texts = j.value("distinct_texts", int64_t(0));
    for (const auto& s : j.value("skips", nlohmann::json::array())) {
      same.skips.push_back({s.value("id", ""), s.value("check", ""), s.value("reason", "")});
    }
    return same;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status OutputLock::Take(const fs::path& out) {
  const std::string path = (out / kLockFile).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::Io(path + ": cannot create the import lock: " + std::strerror(errno));
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

Result<std::optional<ImportReport>> OpenImportOutput(const ImportOptions& o,
                                                     const std::string& fingerprint,
                                                     OutputLock* lock) {
  const fs::path out(o.out);
  const fs::path index_path = out / "meta" / "episodes.jsonl";
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    return Status::InvalidArgument("--out " + o.out + " exists and is not a folder");
  }
  fs::create_directories(out, ec);
  if (ec) return Status::Io(o.out + ": cannot create: " + ec.message());
  BATON_RETURN_IF_ERROR(lock->Take(out));
  RemoveStaleTemps(out);
  if (fs::exists(index_path, ec)) {
    if (auto same = SameImport(out / "meta" / "import_report.json", fingerprint)) return same;
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
  return std::optional<ImportReport>();
}

Status WriteImportedDataset(const ImportOptions& o, const ImportProfile& p,
                            const std::vector<std::vector<SegmentResult>>& results,
                            const RawTensor& empty, const std::string& empty_emb,
                            ImportReport* report) {
  const fs::path out(o.out);
  // One shape for the whole dataset.
  std::optional<DatasetShape> shape;
  std::string shape_from;
  std::string index_text;
  std::set<std::string> ids, texts;
  for (const auto& res : results) {
    for (const auto& r : res) {
      ++report->segments;
      report->bytes_read += r.bytes_read;
      report->bytes_written += r.bytes_written;
      if (r.skip) {
        report->skips.push_back(*r.skip);
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
      ++(r.reused ? report->reused : report->imported);
      index_text += EpisodeMetaJson(*r.meta) + "\n";
    }
  }
  report->distinct_texts =
      o.dedupe_text ? int64_t(texts.size()) : report->imported + report->reused;
  if (!shape) {
    return Status::Data("no segment imported from " + o.srcs.front() + " (" +
                        std::to_string(report->skips.size()) + " skipped; see the report's skips)");
  }
  if (empty.shape[1] != shape->text_dim) {
    return Status::Data(empty_emb + ": empty-prompt embedding " + ShapeString(empty.shape) +
                        " differs from the segments' text [" + std::to_string(shape->text_len) +
                        ", " + std::to_string(shape->text_dim) + "]");
  }

  // The metadata, the index last.
  const std::string empty_path = (out / "meta" / "empty_text.safetensors").string();
  BATON_RETURN_IF_ERROR(
      WriteSafetensors(empty_path, {{"text", empty.dtype, empty.shape, empty.bytes.data()}}));
  report->bytes_written += FileBytes(empty_path);
  BATON_RETURN_IF_ERROR(WriteTextAtomic((out / "meta" / "info.json").string(),
                                        DatasetShapeJson(*shape, kDatasetFormatVersion)));
  nlohmann::ordered_json rj = report->ToJson();
  rj["provenance"] = nlohmann::ordered_json{
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
  BATON_RETURN_IF_ERROR(
      WriteTextAtomic((out / "meta" / "import_report.json").string(), rj.dump(2) + "\n"));
  return WriteTextAtomic((out / "meta" / "episodes.jsonl").string(), index_text);
}

}  // namespace baton
