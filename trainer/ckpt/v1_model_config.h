// The model config of a format-version-1 checkpoint (baton's own names: in_channels, patch_size,
// dim, num_heads, ...), read into the sizes `baton-train ckpt upgrade` rebuilds the model with
// (tools/ckpt_upgrade_cmd.cc owns the renaming of the tensors and the writing). Plain JSON, no
// tensors. Stateless; thread-safe.
#pragma once

#include <string>

#include "trainer/model/model_dims.h"

namespace baton {

// The sizes `path` (a version-1 config.json) gives, every one bounded before anything of its size
// exists (the model, the proj_out permutation); exit 65 naming the file and the key when one is
// missing, of the wrong type or out of range, or when they do not make a model. Whether the
// tensors have these sizes is the caller's check, after the renaming.
ModelDims DimsFromV1Config(const std::string& path);

}  // namespace baton
