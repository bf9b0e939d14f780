// PthSegment: what the importer takes from one of upstream's per-camera latent files
// (`latents/chunk-XXX/<cam>/episode_XXXXXX_<start>_<end>.pth`, a torch.save dict) and from
// `empty_emb.pt`, as plain bytes so the rest of the importer needs no libtorch. The reading
// itself (pth_segment.cc) is libtorch's pickle loader on the zip format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/safetensors.h"
#include "schema/status.h"

namespace baton {

// A tensor's raw little-endian bytes, its dtype and shape.
struct RawTensor {
  StDType dtype = StDType::kBF16;
  std::vector<int64_t> shape;
  std::string bytes;
  int64_t numel() const;
};

struct PthSegment {
  RawTensor latent;  // [F * h * w, C], (f h w) c order
  int64_t latent_num_frames = 0, latent_height = 0, latent_width = 0;
  bool has_text = false;
  RawTensor text_emb;              // [L, Dt] (first camera)
  std::vector<int64_t> frame_ids;  // a list or an int64 tensor in the file
};

// Reads `latent`, `latent_num_frames`, `latent_height`, `latent_width`, and when `with_text`
// also `text_emb` and `frame_ids`. Code::kData naming the file and key for anything unreadable.
Result<PthSegment> ReadPthSegment(const std::string& path, bool with_text);

// empty_emb.pt: a tensor (or a dict holding exactly one tensor).
Result<RawTensor> ReadPthTensor(const std::string& path);

}  // namespace baton
