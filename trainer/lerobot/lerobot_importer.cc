#include "trainer/lerobot/lerobot_importer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "trainer/lerobot/import_fingerprint.h"
#include "trainer/lerobot/import_output.h"
#include "trainer/lerobot/lerobot_meta.h"
#include "trainer/lerobot/pth_segment.h"
#include "trainer/lerobot/segment_import.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// `inner` is `outer` or lies inside it (both absolute and normal).
bool IsWithin(const fs::path& inner, const fs::path& outer) {
  const fs::path rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

// The sub-datasets of every --src, found as upstream finds them (every meta/info.json under
// it), and the id prefix of each (<src name>/<relpath>).
struct ImportSources {
  std::vector<LeRobotDataset> datasets;
  std::vector<std::string> prefixes;
};

Result<ImportSources> FindImportSources(const ImportOptions& o) {
  ImportSources found;
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
      found.datasets.push_back(std::move(ds).value());
      const std::string rel = fs::path(root).lexically_relative(base).generic_string();
      found.prefixes.push_back(base.filename().string() + (rel == "." ? "" : "/" + rel));
    }
  }
  return found;
}

// The empty-prompt embedding, checked against the profile. Read before --out is touched: a bad
// embedding leaves no trace there.
Result<RawTensor> ReadEmptyEmbedding(const std::string& empty_emb, const ImportProfile& p) {
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
  return empty;
}

// The segment phase on `o.workers` threads, an episode at a time each; the first error stops
// them all and is returned.
Status ImportSegments(const ImportOptions& o, const ImportProfile& p,
                      const std::vector<ImportUnit>& units,
                      std::vector<std::vector<SegmentResult>>* results) {
  results->assign(units.size(), {});
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu, text_mu;
  Status first_error;
  auto fail = [&](Status st) {
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.ok()) first_error = std::move(st);
    failed = true;
  };
  const SegmentImportContext ctx{o, p, fs::path(o.out), text_mu, failed};
  auto work = [&] {
    while (!failed) {
      const size_t u = next++;
      if (u >= units.size()) return;
      std::string current = units[u].ds->ParquetPath(units[u].ep->index);
      // Errors cross the pool as values: an exception escaping a thread would end the process.
      try {
        Status st = ImportEpisode(ctx, units[u], &(*results)[u], &current);
        if (!st.ok()) fail(std::move(st));
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
  return first_error;
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
  // 1. The sub-datasets and their episodes.
  BATON_ASSIGN_OR_RETURN(const ImportSources sources, FindImportSources(o));
  std::vector<ImportUnit> units;
  for (size_t d = 0; d < sources.datasets.size(); ++d) {
    for (const auto& ep : sources.datasets[d].episodes) {
      units.push_back({&sources.datasets[d], &ep, sources.prefixes[d]});
    }
  }
  report.datasets = int64_t(sources.datasets.size());
  report.episodes = int64_t(units.size());
  const std::string empty_emb =
      o.empty_emb.empty() ? (fs::path(o.srcs.front()) / "empty_emb.pt").string() : o.empty_emb;

  // 2. The input fingerprint: what decides whether --out already holds this import.
  report.fingerprint = InputFingerprint(o, p, sources.datasets, units, empty_emb);
  BATON_ASSIGN_OR_RETURN(const RawTensor empty, ReadEmptyEmbedding(empty_emb, p));

  // 3. Reuse: the same import already in --out is the answer; else --out is taken for this one.
  OutputLock lock;
  BATON_ASSIGN_OR_RETURN(std::optional<ImportReport> same,
                         OpenImportOutput(o, report.fingerprint, &lock));
  if (same) return std::move(*same);

  // 4. The segments, then 5. the metadata, the index last.
  std::vector<std::vector<SegmentResult>> results;
  BATON_RETURN_IF_ERROR(ImportSegments(o, p, units, &results));
  BATON_RETURN_IF_ERROR(WriteImportedDataset(o, p, results, empty, empty_emb, &report));
  return report;
}

}  // namespace baton
