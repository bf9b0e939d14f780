#include "trainer/data/episode_reader.h"

#include <cmath>
#include <utility>

#include "schema/safetensors.h"

namespace baton {

namespace {

Status EpisodeError(const std::string& path, const EpisodeMeta& meta, const std::string& why) {
  return Status::Data(path + ": episode '" + meta.id + "': " + why);
}

// The tensors' ranks and frame counts agree with the index entry.
Status CheckEpisodeShapes(const std::string& path, const EpisodeMeta& meta, const StTensorInfo* lat,
                          const StTensorInfo* act, const StTensorInfo* mask,
                          const StTensorInfo* text) {
  if (lat->shape.size() != 4)
    return EpisodeError(path, meta, "latents must be [C, F, H, W], got " + ShapeString(lat->shape));
  if (act->shape.size() != 3)
    return EpisodeError(path, meta, "actions must be [A, F, N], got " + ShapeString(act->shape));
  if (text->shape.size() != 2)
    return EpisodeError(path, meta, "text must be [L, Dt], got " + ShapeString(text->shape));
  if (lat->shape[1] != meta.frames) {
    return EpisodeError(path, meta,
                        "latents hold " + std::to_string(lat->shape[1]) + " frames but n_video " +
                            std::to_string(meta.n_video) +
                            " in the index means F = " + std::to_string(meta.frames));
  }
  if (act->shape[1] != meta.frames) {
    return EpisodeError(path, meta,
                        "actions hold " + std::to_string(act->shape[1]) + " frames, expected " +
                            std::to_string(meta.frames));
  }
  if (mask->shape != act->shape) {
    return EpisodeError(path, meta,
                        "actions_mask " + ShapeString(mask->shape) + " differs from actions " +
                            ShapeString(act->shape));
  }
  return Status::Ok();
}

// Every value is finite and the mask is 0 or 1.
Status CheckEpisodeValues(const std::string& path, const EpisodeMeta& meta, const EpisodeData& ep) {
  // One NaN in one episode would turn every weight into NaN at its first step: refuse the data
  // where it is read, naming the file and the tensor.
  for (const auto& [name, values] :
       {std::pair<const char*, const std::vector<float>*>{"latents", &ep.latents},
        {"actions", &ep.actions},
        {"actions_mask", &ep.actions_mask},
        {"text", &ep.text}}) {
    int64_t bad_count = 0, first = -1;
    for (size_t k = 0; k < values->size(); ++k) {
      if (!std::isfinite((*values)[k])) {
        if (first < 0) first = int64_t(k);
        ++bad_count;
      }
    }
    if (bad_count > 0) {
      return EpisodeError(path, meta,
                          std::string("tensor ") + name + " holds " + std::to_string(bad_count) +
                              " NaN/Inf value(s) (first at flat index " + std::to_string(first) +
                              ")");
    }
  }
  for (float m : ep.actions_mask) {
    if (m != 0.0f && m != 1.0f)
      return EpisodeError(path, meta, "actions_mask holds a value other than 0 or 1");
  }
  return Status::Ok();
}

}  // namespace

Result<EpisodeData> ReadEpisode(const DatasetIndex& index, int64_t i) {
  const EpisodeMeta& meta = index.episodes.at(static_cast<size_t>(i));
  const std::string path = index.EpisodePath(i);
  auto opened = SafetensorsFile::Open(path);
  if (!opened.ok()) {
    const Status& st = opened.status();
    // A missing episode file is a broken dataset, not a user typo: data error (exit 65).
    return Status::Data("episode '" + meta.id + "': " + st.message());
  }
  const auto& file = *opened.value();
  const StTensorInfo* lat = file.Find("latents");
  const StTensorInfo* act = file.Find("actions");
  const StTensorInfo* mask = file.Find("actions_mask");
  // Version 2 keeps the text in a file shared by every episode with the same prompt.
  std::shared_ptr<const SafetensorsFile> text_file = opened.value();
  if (!meta.text.empty()) {
    auto t = SafetensorsFile::Open(index.TextPath(i));
    if (!t.ok()) return Status::Data("episode '" + meta.id + "': text: " + t.status().message());
    text_file = t.value();
  }
  const StTensorInfo* text = text_file->Find("text");
  if (!lat || !act || !mask)
    return EpisodeError(path, meta, "needs tensors latents, actions and actions_mask");
  if (!text) {
    return Status::Data(text_file->path() + ": episode '" + meta.id + "': needs a tensor 'text'");
  }
  BATON_RETURN_IF_ERROR(CheckEpisodeShapes(path, meta, lat, act, mask, text));

  EpisodeData ep;
  ep.index = i;
  ep.frames = meta.frames;
  ep.shape = {lat->shape[0], lat->shape[2],  lat->shape[3], act->shape[0],
              act->shape[2], text->shape[0], text->shape[1]};
  if (index.shape && !(*index.shape == ep.shape)) {
    return EpisodeError(path, meta,
                        "sizes " + ep.shape.ToString() + " differ from meta/info.json's " +
                            index.shape->ToString());
  }
  auto read = [&](const char* name, std::vector<float>* out) -> Status {
    auto r = file.ReadFloat32(name);
    if (!r.ok()) return r.status();
    *out = std::move(r).value();
    return Status::Ok();
  };
  BATON_RETURN_IF_ERROR(read("latents", &ep.latents));
  BATON_RETURN_IF_ERROR(read("actions", &ep.actions));
  BATON_RETURN_IF_ERROR(read("actions_mask", &ep.actions_mask));
  {
    auto r = text_file->ReadFloat32("text");
    if (!r.ok()) return r.status();
    ep.text = std::move(r).value();
  }
  BATON_RETURN_IF_ERROR(CheckEpisodeValues(path, meta, ep));
  return ep;
}

}  // namespace baton
