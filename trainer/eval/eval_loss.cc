#include "trainer/eval/eval_loss.h"

#include <string>
#include <vector>

#include "schema/exit_codes.h"
#include "trainer/data/pad_collate.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/fail.h"
#include "trainer/train/train_step.h"

namespace baton {

namespace {

// One episode's part of the value, as it travels between ranks: its raw bytes in hex (the
// agreement's payloads are text; the doubles must arrive bit for bit).
struct EpisodeSums {
  int64_t k = 0;  // position in the eval set
  double video = 0, action = 0;
  int64_t frames = 0;
};

std::string Pack(const std::vector<EpisodeSums>& v) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(EpisodeSums); ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

std::vector<EpisodeSums> Unpack(const std::string& hex) {
  TORCH_CHECK(hex.size() % (2 * sizeof(EpisodeSums)) == 0, "an eval part of ", hex.size(),
              " hex digits");
  auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::vector<EpisodeSums> v(hex.size() / (2 * sizeof(EpisodeSums)));
  auto* bytes = reinterpret_cast<unsigned char*>(v.data());
  for (size_t i = 0; i < hex.size() / 2; ++i)
    bytes[i] = static_cast<unsigned char>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
  return v;
}

// The config the eval's forward runs under: its draws keyed by eval.seed, the text kept.
RunConfig EvalForwardConfig(const RunConfig& config) {
  RunConfig c = config;
  c.run.seed = config.eval.seed;
  c.objective.text_dropout = 0;
  return c;
}

EpisodeSums EvaluateEpisode(VideoActionModel& model, const RunConfig& eval_config,
                            const EvalSet& set, int64_t k, const DatasetShape& shape,
                            torch::Dtype dtype, const torch::Device& device) {
  EpisodeData ep = BATON_VALUE_OR_FAIL(ReadEpisode(*set.eval, k),
                                       "regenerate or remove the eval episode named above");
  if (!(ep.shape == shape)) {
    BATON_FAIL(kExitConfig,
               set.eval->EpisodePath(k) + ": eval episode of size " + ep.shape.ToString() +
                   ", but the training data's is " + shape.ToString(),
               "eval.data must hold episodes of data.path's sizes");
  }
  PaddedBatch batch = PadCollate({ep}, eval_config.data.pad_multiple);
  batch.episodes = {set.eval_keys[size_t(k)]};
  MicroBatch mb;
  const LossSums l = ForwardLoss(model, eval_config, batch, kEvalDrawStep, shape, dtype, device,
                                 torch::Tensor(), /*global_frames=*/1.0, &mb);
  EpisodeSums e;
  e.k = k;
  e.video = l.video.to(torch::kFloat64).cpu().item<double>();
  e.action = l.action.to(torch::kFloat64).cpu().item<double>();
  e.frames = mb.valid_frames;
  return e;
}

}  // namespace

EvalValue EvaluateHeldOut(VideoActionModel& model, const RunConfig& config, const EvalSet& set,
                          const DatasetShape& shape, torch::Dtype dtype,
                          const torch::Device& device, ProcessGroupHandle& group,
                          const std::function<void(int64_t)>& on_episode) {
  const int64_t n = set.eval ? int64_t(set.eval->episodes.size()) : 0;
  if (n == 0) {
    BATON_FAIL(kExitConfig, "the eval set is empty",
               "give eval.fraction (with eval.seed), eval.episodes or eval.data");
  }
  const RunConfig eval_config = EvalForwardConfig(config);
  const int64_t rank = group.rank(), world = group.world_size();
  const std::vector<std::string> parts = RunAgreed(group, "while evaluating", [&] {
    torch::NoGradGuard no_grad;
    std::vector<EpisodeSums> mine;
    for (int64_t k = rank, i = 0; k < n; k += world, ++i) {
      if (on_episode) on_episode(i);
      mine.push_back(EvaluateEpisode(model, eval_config, set, k, shape, dtype, device));
    }
    return Pack(mine);
  });
  std::vector<EpisodeSums> all(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (const std::string& p : parts) {
    for (const EpisodeSums& e : Unpack(p)) {
      TORCH_CHECK(e.k >= 0 && e.k < n && !seen[size_t(e.k)], "eval episode ", e.k, " twice");
      all[size_t(e.k)] = e;
      seen[size_t(e.k)] = true;
    }
  }
  EvalValue v;
  for (int64_t k = 0; k < n; ++k) {
    TORCH_CHECK(seen[size_t(k)], "no rank evaluated eval episode ", k);
    v.video_sum += all[size_t(k)].video;
    v.action_sum += all[size_t(k)].action;
    v.valid_frames += all[size_t(k)].frames;
  }
  v.episodes = n;
  v.loss_video = v.video_sum / double(v.valid_frames);
  v.loss_action = v.action_sum / double(v.valid_frames);
  v.loss = config.objective.video_loss_weight * v.loss_video +
           config.objective.action_loss_weight * v.loss_action;
  return v;
}

}  // namespace baton
