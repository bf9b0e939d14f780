#include "trainer/data/empty_text.h"

#include <cmath>
#include <filesystem>

#include "schema/safetensors.h"

namespace baton {

Result<std::vector<float>> ReadEmptyText(const std::string& dataset_dir,
                                         const DatasetShape& shape) {
  const std::string path = (std::filesystem::path(dataset_dir) / kEmptyTextFile).string();
  auto file = SafetensorsFile::Open(path);
  if (!file.ok()) {
    if (file.status().code() == Code::kNotFound) {
      return Status::Data(path +
                          ": missing; objective.text_dropout > 0 swaps episodes' text "
                          "for this empty-prompt embedding (write it, or set "
                          "objective.text_dropout: 0)");
    }
    return file.status();
  }
  const std::vector<int64_t> want = {shape.text_len, shape.text_dim};
  auto text = (*file)->ReadFloat32("text", &want);
  if (!text.ok()) return text.status();
  for (float v : *text) {
    if (!std::isfinite(v)) return Status::Data(path + ": tensor 'text' holds NaN/Inf");
  }
  return text;
}

}  // namespace baton
