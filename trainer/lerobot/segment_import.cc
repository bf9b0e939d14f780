#include "trainer/lerobot/segment_import.h"

#include <charconv>
#include <cmath>

#include "schema/input_file.h"
#include "schema/safetensors.h"
#include "trainer/lerobot/action_transform.h"
#include "trainer/lerobot/latent_layout.h"
#include "trainer/lerobot/pth_segment.h"
#include "trainer/parquet/parquet_file.h"

namespace baton {
namespace fs = std::filesystem;

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const auto s = fs::file_size(path, ec);
  return ec ? 0 : int64_t(s);
}

namespace {

std::string FileNameFor(const std::string& id) {
  std::string f;
  for (char c : id) f += (c == '/' ? std::string("__") : std::string(1, c));
  return "episodes/" + f + ".safetensors";
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

// The episode file an earlier run wrote from the same inputs (`source`), when it is whole and
// its metadata is what this importer writes: then `*r` takes it as this segment's episode.
// Anything unexpected in it (a bad count, a foreign text path) and it is imported again rather
// than trusted.
bool ReuseEpisodeFile(const fs::path& out, const std::string& episode_path,
                      const std::string& source, EpisodeMeta meta, SegmentResult* r) {
  std::error_code ec;
  if (!fs::exists(episode_path, ec)) return false;
  auto old = SafetensorsFile::Open(episode_path);
  if (!old.ok()) return false;
  const auto& md = old.value()->metadata();
  auto get = [&](const char* key) {
    auto it = md.find(key);
    return it == md.end() ? std::string() : it->second;
  };
  const StTensorInfo* lat = old.value()->Find("latents");
  const StTensorInfo* act = old.value()->Find("actions");
  const std::string text_file = get("text_file");
  const auto n_video = ParseCount(get("n_video"));
  const auto text_len = ParseCount(get("text_len"));
  const auto text_dim = ParseCount(get("text_dim"));
  const bool text_ok = text_file.empty() || (text_file.rfind("texts/", 0) == 0 &&
                                             text_file.find("..") == std::string::npos &&
                                             fs::is_regular_file(out / text_file, ec));
  if (get("source") != source || !lat || !act || lat->shape.size() != 4 || act->shape.size() != 3 ||
      !n_video || !text_len || !text_dim || !text_ok) {
    return false;
  }
  meta.n_video = *n_video;
  meta.frames = EpisodeLatentFrames(meta.n_video);
  meta.text = text_file;
  r->shape = {lat->shape[0], lat->shape[2], lat->shape[3], act->shape[0],
              act->shape[2], *text_len,     *text_dim};
  r->meta = std::move(meta);
  r->reused = true;
  return true;
}

// The episode's `action` column, with LeRobot's checks of the episode as a whole (its length
// against episodes.jsonl, its timestamps against fps) in `*check`.
Result<parquet::ColumnData> ReadEpisodeActions(const LeRobotDataset& ds, const LeRobotEpisode& ep,
                                               std::optional<SegmentCheck>* check,
                                               int64_t* bytes_read) {
  const std::string parquet_path = ds.ParquetPath(ep.index);
  if (Status st = CheckRegularFile(parquet_path); !st.ok()) {
    return st.code() == Code::kNotFound ? Status::Data(st.message()) : st;
  }
  auto file = parquet::ParquetFile::Open(parquet_path);
  if (!file.ok()) return file.status();
  auto col = file->ReadColumn("action");
  if (!col.ok()) return col.status();
  if (col->Width() < 0) {
    return Status::Data(parquet_path + ": column 'action': rows of different widths");
  }
  *bytes_read += FileBytes(parquet_path);
  if (col->rows() != ep.length) {
    *check = SegmentCheck{"length_mismatch",
                          "episodes.jsonl says length " + std::to_string(ep.length) +
                              ", the parquet holds " + std::to_string(col->rows()) + " rows"};
  } else if (auto c = CheckTimestamps(*file, ds.fps); c) {
    *check = c;
  }
  return std::move(col).value();
}

// What one segment's checks decide: the file they are about and what failed, or nothing.
struct Failed {
  SegmentCheck check;
  std::string file;
};

// Reads the segment's camera files, checks them as upstream's loader would, lays them out and
// transforms the actions, then writes the text and episode files. A failed check comes back in
// `*failed` with nothing written; an error of the inputs or the disk as the Status.
// Reads every camera's .pth file of the segment; *nonfinite is the first camera whose latent
// holds NaN/Inf.
Status ReadCameraLatents(const std::vector<std::string>& cams, SegmentResult* r,
                         std::string* current, std::vector<PthSegment>* latents,
                         std::optional<size_t>* nonfinite) {
  for (size_t c = 0; c < cams.size(); ++c) {
    *current = cams[c];
    auto s = ReadPthSegment(cams[c], c == 0);
    if (!s.ok()) {
      return s.status().code() == Code::kNotFound ? Status::Data(s.status().message()) : s.status();
    }
    r->bytes_read += FileBytes(cams[c]);
    latents->push_back(std::move(s).value());
    if (!*nonfinite && CountNonFinite(latents->back().latent) > 0) *nonfinite = c;
  }
  return Status::Ok();
}

// The text embedding: [text_len, Tx] and finite.
std::optional<SegmentCheck> CheckText(const ImportProfile& p, const RawTensor& text) {
  if (text.shape.size() != 2 || text.shape[0] != p.text_len || text.shape[1] < 1) {
    return SegmentCheck{"text_shape", "text_emb " + ShapeString(text.shape) + ", expected [" +
                                          std::to_string(p.text_len) + ", Tx]"};
  }
  if (const int64_t bad = CountNonFinite(text); bad > 0) {
    return SegmentCheck{"nonfinite_text",
                        "key 'text_emb' holds " + std::to_string(bad) + " NaN/Inf value(s)"};
  }
  return std::nullopt;
}

// Writes the segment's episode file (and, under dedupe_text, its shared text file) and fills *r.
Status WriteSegment(const SegmentImportContext& ctx, const LeRobotSegment& seg,
                    const std::string& source, const RawTensor& video, const RawTensor& text,
                    const SegmentActions& acts, EpisodeMeta meta, SegmentResult* r,
                    std::string* current) {
  const ImportProfile& p = ctx.profile;
  const int64_t F = meta.frames;
  std::vector<StTensorRef> tensors{
      {"latents", video.dtype, video.shape, video.bytes.data()},
      {"actions", StDType::kF32, {p.action_dim, F, acts.steps}, acts.actions.data()},
      {"actions_mask", StDType::kF32, {p.action_dim, F, acts.steps}, acts.mask.data()}};
  if (ctx.options.dedupe_text) {
    meta.text = "texts/" + ContentHash(text) + ".safetensors";
    const std::string text_path = (ctx.out / meta.text).string();
    // Content-addressed and written atomically: a file that exists is complete. One writer
    // at a time: two workers with the same prompt would share the temp file's name.
    std::lock_guard<std::mutex> lock(ctx.text_mu);
    std::error_code ec;
    if (!fs::exists(text_path, ec)) {
      BATON_RETURN_IF_ERROR(
          WriteSafetensors(text_path, {{"text", text.dtype, text.shape, text.bytes.data()}}));
      r->bytes_written += FileBytes(text_path);
    }
  } else {
    tensors.push_back({"text", text.dtype, text.shape, text.bytes.data()});
  }
  const std::string episode_path = (ctx.out / meta.file).string();
  *current = episode_path;
  BATON_RETURN_IF_ERROR(WriteSafetensors(episode_path, tensors,
                                         {{"id", meta.id},
                                          {"source", source},
                                          {"n_video", std::to_string(meta.n_video)},
                                          {"text_file", meta.text},
                                          {"text_len", std::to_string(text.shape[0])},
                                          {"text_dim", std::to_string(text.shape[1])},
                                          {"frame_start", std::to_string(seg.start)},
                                          {"frame_end", std::to_string(seg.end)}}));
  r->bytes_written += FileBytes(episode_path);
  r->shape = {video.shape[0], video.shape[2], video.shape[3], p.action_dim,
              acts.steps,     text.shape[0],  text.shape[1]};
  r->meta = std::move(meta);
  return Status::Ok();
}

Status ImportSegment(const SegmentImportContext& ctx, const LeRobotSegment& seg,
                     const std::vector<std::string>& cams, const parquet::ColumnData& action,
                     const std::string& parquet_path, const std::string& source, EpisodeMeta meta,
                     SegmentResult* r, std::optional<Failed>* failed, std::string* current) {
  const ImportProfile& p = ctx.profile;
  std::vector<PthSegment> latents;
  std::optional<size_t> nonfinite;
  BATON_RETURN_IF_ERROR(ReadCameraLatents(cams, r, current, &latents, &nonfinite));
  auto fail = [&](SegmentCheck c, const std::string& file) {
    *failed = Failed{std::move(c), file};
    return Status::Ok();
  };
  if (nonfinite) {
    return fail(
        {"nonfinite_latent", "key 'latent' holds " +
                                 std::to_string(CountNonFinite(latents[*nonfinite].latent)) +
                                 " NaN/Inf value(s)"},
        cams[*nonfinite]);
  }
  const PthSegment& first = latents.front();
  const RawTensor& text = first.text_emb;
  if (auto bad = CheckText(p, text)) return fail(*bad, cams[0]);
  int64_t F = 0, stride = 0;
  SegmentCheck c;
  if (!CheckFrameIds(p, first.frame_ids, seg.start, seg.end, &F, &stride, &c)) {
    return fail(c, cams[0]);
  }
  if (first.latent_num_frames != F) {
    return fail({"latent_frames_mismatch",
                 "latent_num_frames " + std::to_string(first.latent_num_frames) +
                     " differs from F = (len(frame_ids) - 1) // 4 + 1 = " + std::to_string(F)},
                cams[0]);
  }
  RawTensor video;
  if (!LayoutLatents(p, latents, &video, &c)) return fail(c, cams[0]);
  SegmentActions acts;
  if (!TransformActions(p, action.values, action.rows(), action.Width(), seg.start, seg.end,
                        first.frame_ids, &acts, &c)) {
    return fail(c, parquet_path);
  }

  meta.n_video = int64_t(first.frame_ids.size());
  meta.frames = F;
  return WriteSegment(ctx, seg, source, video, text, acts, std::move(meta), r, current);
}

}  // namespace

Status ImportEpisode(const SegmentImportContext& ctx, const ImportUnit& unit,
                     std::vector<SegmentResult>* results, std::string* current) {
  const ImportOptions& o = ctx.options;
  const LeRobotDataset& ds = *unit.ds;
  const LeRobotEpisode& ep = *unit.ep;
  const std::string parquet_path = ds.ParquetPath(ep.index);
  results->resize(ep.segments.size());
  std::optional<parquet::ColumnData> action;  // read on the first segment that needs it
  std::optional<SegmentCheck> episode_check;
  for (size_t k = 0; k < ep.segments.size() && !ctx.stop; ++k) {
    const LeRobotSegment& seg = ep.segments[k];
    SegmentResult& r = (*results)[k];
    const std::string id = unit.id_prefix + "/" + std::to_string(ep.index) + "_" +
                           std::to_string(seg.start) + "_" + std::to_string(seg.end);
    // A failed check: a counted skip under --skip-invalid, else the import's error.
    auto check_failed = [&](const SegmentCheck& c, const std::string& file) {
      if (o.skip_invalid) {
        r.skip = ImportSkip{id, c.check, file + ": " + c.message};
        return Status::Ok();
      }
      return Status::Data(file + ": segment " + id + ": " + c.check + ": " + c.message +
                          " (--skip-invalid counts such segments instead)");
    };
    std::vector<std::string> cams;
    std::string missing;
    std::error_code ec;
    for (const auto& cam : ctx.profile.obs_cam_keys) {
      cams.push_back(ds.LatentPath(ep.index, cam, seg.start, seg.end));
      if (!fs::exists(cams.back(), ec) && missing.empty()) missing = cams.back();
    }
    if (!missing.empty()) {  // upstream drops these silently; baton counts them
      r.skip = ImportSkip{id, "missing_camera", missing + ": no such latent file"};
      continue;
    }
    const std::string source = SegmentSourceHash(o, ctx.profile, parquet_path, ep.length, cams);
    EpisodeMeta meta;
    meta.id = id;
    meta.file = FileNameFor(id);
    *current = (ctx.out / meta.file).string();
    if (ReuseEpisodeFile(ctx.out, *current, source, meta, &r)) continue;
    if (!action) {
      *current = parquet_path;
      auto col = ReadEpisodeActions(ds, ep, &episode_check, &r.bytes_read);
      if (!col.ok()) return col.status();
      action = std::move(col).value();
    }
    if (episode_check) {
      BATON_RETURN_IF_ERROR(check_failed(*episode_check, parquet_path));
      continue;
    }
    std::optional<Failed> failed;
    BATON_RETURN_IF_ERROR(
        ImportSegment(ctx, seg, cams, *action, parquet_path, source, meta, &r, &failed, current));
    if (failed) BATON_RETURN_IF_ERROR(check_failed(failed->check, failed->file));
  }
  return Status::Ok();
}

}  // namespace baton
