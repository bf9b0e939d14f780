// The sizes of the model a run builds, from its config and its dataset: the model: keys, the
// dataset's latent channels, action and text sizes, and how train.activation_checkpointing runs
// it. Torch-free: nothing here needs a tensor. A pure function; thread-safe.
#pragma once

#include "schema/run_config.h"
#include "trainer/data/dataset_index.h"
#include "trainer/model/model_dims.h"

namespace baton {

// Model sizes from the config and the dataset.
ModelDims MakeModelDims(const RunConfig& config, const DatasetShape& shape);

}  // namespace baton
