// PthSegment: what the importer takes from one of upstream's per-camera latent files
// (`latents/chunk-XXX/<cam>/episode_XXXXXX_<start>_<end>.pth`, a torch.save dict) and from
// `empty_emb.pt`, as plain bytes. Read without libtorch: libtorch's unpickler trusts its input
// (an opcode on an empty stack crashes it, a tensor larger than its storage reads the heap), so
// the file goes through the bounded scan of pickle_scan.h, which checks every opcode, size and
// extent, and the values come from that scan. Torch-free; thread-safe.
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

// Reads `latent`, `latent_num_frames`, `latent_height`, `latent_width` (each >= 1, F*h*w the
// latent's rows), and when `with_text` also `text_emb` and `frame_ids`. Code::kData naming the
// file and key for anything unreadable; kNotFound when the file is absent.
Result<PthSegment> ReadPthSegment(const std::string& path, bool with_text);

// NaN and Inf elements of a float tensor (BF16, F16, F32).
int64_t CountNonFinite(const RawTensor& t);

// empty_emb.pt: a tensor (or a dict holding exactly one tensor).
Result<RawTensor> ReadPthTensor(const std::string& path);

}  // namespace baton
