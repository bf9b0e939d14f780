#include "trainer/train/run_model_dims.h"

#include "trainer/model/attention_plan.h"

namespace baton {

ModelDims MakeModelDims(const RunConfig& c, const DatasetShape& s) {
  ModelDims d;
  d.channels = s.channels;
  d.patch = c.model.patch_size;
  d.action_dim = s.action_dim;
  d.action_steps = s.action_steps;
  d.text_dim = s.text_dim;
  d.dim = c.model.dim;
  d.heads = c.model.heads;
  d.layers = c.model.layers;
  d.ffn_dim = c.model.ffn_dim;
  d.freq_dim = c.model.freq_dim;
  d.rope_theta = c.model.rope_theta;
  d.eps = c.model.eps;
  const ActivationCheckpointing checkpointing = c.train.activation_checkpointing;
  d.recompute_blocks = checkpointing != ActivationCheckpointing::kNone;
  d.recompute_attention_entries =
      checkpointing == ActivationCheckpointing::kBlocksAttention ? kRecomputeCallEntries : 0;
  return d;
}

}  // namespace baton
