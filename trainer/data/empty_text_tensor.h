// The dataset's empty prompt as the tensor text dropout swaps in (objective.text_dropout): the
// one reading of meta/empty_text.safetensors (empty_text.h) into torch, for training, the
// one-step and verify-packing tools and the unit tests' tiny trainer, so all of them drop text
// with the same embedding. Header-only: its includers compile against torch already.
// Thread-safe (reads only).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "trainer/data/empty_text.h"
#include "trainer/fail.h"

namespace baton {

// [L, Dt] float32 on the CPU when `text_dropout` > 0, else an undefined tensor (nothing read).
// Fails fast (FatalError, exit 65) naming the file when it is absent or not the embedding
// ReadEmptyText accepts.
inline torch::Tensor EmptyTextTensor(double text_dropout, const std::string& dataset_dir,
                                     const DatasetShape& shape) {
  if (text_dropout <= 0) return torch::Tensor();
  std::vector<float> text = BATON_VALUE_OR_FAIL(
      ReadEmptyText(dataset_dir, shape), "objective.text_dropout " + std::to_string(text_dropout) +
                                             " needs the dataset's empty-prompt embedding");
  return torch::from_blob(text.data(), {shape.text_len, shape.text_dim}, torch::kFloat32).clone();
}

}  // namespace baton
