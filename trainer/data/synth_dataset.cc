#include "trainer/data/synth_dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "schema/atomic_file.h"
#include "schema/safetensors.h"
#include "trainer/data/empty_text.h"
#include "trainer/rng/philox.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

constexpr double kBlobSigma = 1.2;     // blob radius, in latent pixels
constexpr double kMaxSpeed = 0.5;      // latent pixels per action sub-step
constexpr double kSpeedJitter = 0.15;  // random-walk step of the velocity per sub-step
constexpr double kLatentNoise = 0.02;  // observation noise on the latents

// Distance on the torus, so blobs that leave one side come back on the other.
double WrapDelta(double a, double b, double size) {
  double d = std::fmod(a - b, size);
  if (d > size / 2) d -= size;
  if (d < -size / 2) d += size;
  return d;
}

// One episode's blobs: colours and the positions and velocities of their random walk.
struct Blobs {
  std::vector<double> colour, y, x, vy, vx;
};

Blobs DrawBlobs(const DatasetShape& s, int64_t blobs, RandomStream& rng) {
  Blobs b;
  b.colour.resize(static_cast<size_t>(blobs * s.channels));
  for (auto& c : b.colour) c = rng.Normal();
  b.y.resize(blobs), b.x.resize(blobs), b.vy.resize(blobs), b.vx.resize(blobs);
  for (int64_t k = 0; k < blobs; ++k) {
    b.y[k] = rng.Uniform() * double(s.height);
    b.x[k] = rng.Uniform() * double(s.width);
    b.vy[k] = (rng.Uniform() * 2 - 1) * kMaxSpeed;
    b.vx[k] = (rng.Uniform() * 2 - 1) * kMaxSpeed;
  }
  return b;
}

// Adds frame f of every blob into latents [C, F, H, W].
void DrawFrame(const DatasetShape& s, int64_t F, int64_t f, int64_t blobs, const Blobs& b,
               std::vector<float>& latents) {
  for (int64_t k = 0; k < blobs; ++k) {
    for (int64_t h = 0; h < s.height; ++h) {
      for (int64_t w = 0; w < s.width; ++w) {
        const double dy = WrapDelta(double(h), b.y[k], double(s.height));
        const double dx = WrapDelta(double(w), b.x[k], double(s.width));
        const double g = std::exp(-(dy * dy + dx * dx) / (2 * kBlobSigma * kBlobSigma));
        for (int64_t c = 0; c < s.channels; ++c) {
          latents[static_cast<size_t>(((c * F + f) * s.height + h) * s.width + w)] +=
              float(b.colour[k * s.channels + c] * g);
        }
      }
    }
  }
}

// Moves every blob by frame f's N sub-step actions and records them in actions/mask [A, F, N].
void MoveFrame(const DatasetShape& s, int64_t F, int64_t f, int64_t blobs, RandomStream& rng,
               Blobs& b, std::vector<float>& actions, std::vector<float>& mask) {
  const int64_t N = s.action_steps;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < blobs; ++k) {
      b.vy[k] = std::clamp(b.vy[k] + kSpeedJitter * rng.Normal(), -kMaxSpeed, kMaxSpeed);
      b.vx[k] = std::clamp(b.vx[k] + kSpeedJitter * rng.Normal(), -kMaxSpeed, kMaxSpeed);
      b.y[k] += b.vy[k];
      b.x[k] += b.vx[k];
      const size_t iy = static_cast<size_t>(((2 * k) * F + f) * N + n);
      const size_t ix = static_cast<size_t>(((2 * k + 1) * F + f) * N + n);
      actions[iy] = float(b.vy[k] / kMaxSpeed);
      actions[ix] = float(b.vx[k] / kMaxSpeed);
      mask[iy] = mask[ix] = 1.0f;
    }
  }
}

// Writes episode e's safetensors file and returns its index entry.
Status WriteSynthEpisode(const SynthOptions& o, int64_t e, int64_t blobs,
                         const std::vector<double>& proj, EpisodeMeta* out) {
  const DatasetShape& s = o.shape;
  RandomStream rng(o.seed, StreamTag::kSynthData, uint64_t(e));
  int64_t F = o.min_frames + int64_t(rng.UniformInt(uint64_t(o.max_frames - o.min_frames + 1)));
  if (e == 0) F = o.min_frames;
  if (e == 1) F = o.max_frames;
  EpisodeMeta meta;
  char id[32];
  std::snprintf(id, sizeof(id), "ep_%06lld", static_cast<long long>(e));
  meta.id = id;
  meta.n_video = 4 * (F - 1) + 1 + int64_t(rng.UniformInt(4));  // any of the 4 that give F
  meta.frames = F;
  meta.file = "episodes/" + meta.id + ".safetensors";

  Blobs b = DrawBlobs(s, blobs, rng);
  const int64_t N = s.action_steps, HW = s.height * s.width;
  std::vector<float> latents(static_cast<size_t>(s.channels * F * HW), 0.0f);
  std::vector<float> actions(static_cast<size_t>(s.action_dim * F * N), 0.0f);
  std::vector<float> mask(actions.size(), 0.0f);
  for (int64_t f = 0; f < F; ++f) {
    DrawFrame(s, F, f, blobs, b, latents);
    MoveFrame(s, F, f, blobs, rng, b, actions, mask);
  }
  for (auto& v : latents) v += float(kLatentNoise * rng.Normal());

  std::vector<float> text(static_cast<size_t>(s.text_len * s.text_dim));
  const size_t nc = b.colour.size();
  for (size_t t = 0; t < text.size(); ++t) {
    double acc = 0;
    for (size_t j = 0; j < nc; ++j) acc += proj[t * nc + j] * b.colour[j];
    text[t] = float(acc);
  }

  BATON_RETURN_IF_ERROR(WriteSafetensors(
      (fs::path(o.out) / meta.file).string(),
      {{"latents", StDType::kF32, {s.channels, F, s.height, s.width}, latents.data()},
       {"actions", StDType::kF32, {s.action_dim, F, N}, actions.data()},
       {"actions_mask", StDType::kF32, {s.action_dim, F, N}, mask.data()},
       {"text", StDType::kF32, {s.text_len, s.text_dim}, text.data()}},
      {{"episode", meta.id}, {"n_video", std::to_string(meta.n_video)}}));
  *out = meta;
  return Status::Ok();
}

// Checks the options and prepares the output folders; *blobs is the blob count the shape allows.
Status PrepareSynthDataset(const SynthOptions& o, const fs::path& index_path, int64_t* blobs) {
  const DatasetShape& s = o.shape;
  if (o.episodes < 1) return Status::InvalidArgument("synth-data: --episodes must be >= 1");
  if (o.min_frames < 1 || o.max_frames < o.min_frames) {
    return Status::InvalidArgument("synth-data: --frames MIN:MAX needs 1 <= MIN <= MAX, got " +
                                   std::to_string(o.min_frames) + ":" +
                                   std::to_string(o.max_frames));
  }
  *blobs = std::min<int64_t>(o.blobs, s.action_dim / 2);
  if (*blobs < 1) return Status::InvalidArgument("synth-data: action_dim must be >= 2");

  const fs::path root(o.out);
  std::error_code ec;
  if (fs::exists(index_path, ec) && !o.overwrite) {
    return Status::InvalidArgument(o.out + " already holds a dataset (" + index_path.string() +
                                   "); pass --overwrite to replace it");
  }
  fs::create_directories(root / "meta", ec);
  fs::create_directories(root / "episodes", ec);
  if (ec) return Status::Io(o.out + ": cannot create folders: " + ec.message());
  if (o.overwrite) fs::remove(index_path, ec);  // no index while episodes are being replaced
  return Status::Ok();
}

}  // namespace

Status WriteSynthDataset(const SynthOptions& o) {
  const DatasetShape& s = o.shape;
  const fs::path root(o.out);
  const fs::path index_path = root / "meta" / "episodes.jsonl";
  int64_t blobs = 0;
  BATON_RETURN_IF_ERROR(PrepareSynthDataset(o, index_path, &blobs));

  // Text projection shared by the whole dataset: colour -> text embedding.
  RandomStream proj_rng(o.seed, StreamTag::kSynthData, ~uint64_t(0));
  std::vector<double> proj(static_cast<size_t>(s.text_len * s.text_dim * blobs * s.channels));
  for (auto& p : proj) p = proj_rng.Normal() / std::sqrt(double(blobs * s.channels));

  std::string index_text;
  for (int64_t e = 0; e < o.episodes; ++e) {
    EpisodeMeta meta;
    BATON_RETURN_IF_ERROR(WriteSynthEpisode(o, e, blobs, proj, &meta));
    index_text += EpisodeMetaJson(meta) + "\n";
  }
  // The empty-prompt embedding text dropout swaps in (meta/empty_text.safetensors): a fixed
  // pattern unlike any episode's text, so a test can tell which one the model saw.
  std::vector<float> empty(static_cast<size_t>(s.text_len * s.text_dim));
  for (size_t t = 0; t < empty.size(); ++t) empty[t] = float(0.5 * std::sin(0.7 * double(t) + 0.3));
  BATON_RETURN_IF_ERROR(
      WriteSafetensors((root / kEmptyTextFile).string(),
                       {{"text", StDType::kF32, {s.text_len, s.text_dim}, empty.data()}}));
  BATON_RETURN_IF_ERROR(
      WriteTextAtomic((root / "meta" / "info.json").string(), DatasetShapeJson(s)));
  return WriteTextAtomic(index_path.string(), index_text);
}

}  // namespace baton
