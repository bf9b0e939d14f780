// The dataset's empty-prompt text embedding, used by text dropout (objective.text_dropout):
// `<dataset>/meta/empty_text.safetensors`, one tensor named `text` of shape [L, Dt] (the same L
// and Dt as every episode's `text`), any float dtype (docs/dataset_format.md). Upstream trains
// classifier-free guidance by swapping an episode's text for this embedding.
// Torch-free; thread-safe (reads only).
#pragma once

#include <string>
#include <vector>

#include "schema/status.h"
#include "trainer/data/dataset_index.h"

namespace baton {

inline constexpr const char* kEmptyTextFile = "meta/empty_text.safetensors";

// The [L, Dt] embedding as float32, row-major. Code::kData (exit 65) naming the file when it is
// absent (with a hint on text_dropout), unreadable, without a `text` tensor of `shape`'s text
// size, or not finite.
Result<std::vector<float>> ReadEmptyText(const std::string& dataset_dir, const DatasetShape& shape);

}  // namespace baton
