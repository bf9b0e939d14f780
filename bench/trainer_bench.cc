// baton-bench-trainer: the trainer's benchmark cases, one case per process so peak memory is
// the case's own. bench/trainer_bench.sh runs them side by side and prints the ratios.
//
//   attention --tokens T --path sparse|dense   time and peak RSS of one masked self-attention
//                                              forward + backward over a packed row of T tokens
//   throughput --config CFG --batch B          forward + backward tokens/s over the first 16
//                                              episodes as micro-batches of B
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "schema/run_config.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/pad_collate.h"
#include "trainer/dist/process_group.h"
#include "trainer/model/attention.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/train_step.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int Attention(int64_t tokens, const std::string& path, int64_t window, int64_t chunk) {
  // Rows like the reference dataset's (docs/design.md): 4 samples, 16 patches + 4 action
  // sub-steps per frame (40 tokens a frame).
  const int64_t per_frame = 2 * (16 + 4), B = 4;
  const int64_t F = std::max<int64_t>(1, tokens / (per_frame * B));
  std::vector<baton::SampleSpec> specs(B, {F, chunk, window});
  const baton::PackedLayout layout = baton::BuildPackedLayout(F, 4, 4, 4, specs);
  const int64_t H = 2, hd = 64;
  torch::manual_seed(0);
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true);
  auto q = torch::randn({layout.tokens, H, hd}, opts), k = torch::randn({layout.tokens, H, hd}, opts),
       v = torch::randn({layout.tokens, H, hd}, opts);
  const auto t_plan = Clock::now();
  baton::LayoutTensors lt = baton::MakeLayoutTensors(layout, hd, 10000.0, torch::kCPU, torch::kFloat32);
  const double plan_s = Since(t_plan);
  const int64_t allowed = baton::AllowedPairs(lt);
  const int64_t computed = path == "dense" ? layout.tokens * layout.tokens : layout.computed_pairs();
  const int64_t rss0 = baton::PeakRssBytes();
  const auto t0 = Clock::now();
  auto out = path == "dense" ? baton::DenseMaskedAttention(q, k, v, layout)
                             : baton::BlockSparseAttention(q, k, v, lt);
  const double fwd_s = Since(t0);
  out.sum().backward();
  const double secs = Since(t0);
  nlohmann::ordered_json j{{"case", "attention"}, {"path", path}, {"tokens", layout.tokens},
                           {"window", window}, {"chunk", chunk}, {"seconds", secs}, {"forward_seconds", fwd_s},
                           {"plan_seconds", plan_s}, {"peak_rss_bytes", baton::PeakRssBytes()},
                           {"rss_growth_bytes", baton::PeakRssBytes() - rss0},
                           {"computed_pairs", computed}, {"allowed_pairs", allowed}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int Throughput(const std::string& config_path, int64_t batch, int64_t episodes, int64_t reps) {
  auto config = baton::LoadRunConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 78;
  }
  auto index = baton::LoadDatasetIndex(config->data.path).value();
  std::vector<baton::EpisodeData> eps;
  for (int64_t i = 0; i < episodes; ++i) eps.push_back(baton::ReadEpisode(index, i).value());
  double frames = 0;
  for (const auto& e : eps) frames += double(e.frames);
  std::vector<baton::PaddedBatch> micro;
  for (int64_t m = 0; m < episodes / batch; ++m) {
    micro.push_back(baton::PadCollate({eps.begin() + m * batch, eps.begin() + (m + 1) * batch},
                                      config->data.pad_multiple));
  }
  torch::manual_seed(0);
  baton::VideoActionModel model(baton::MakeModelDims(config.value(), eps[0].shape));
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters()) named.push_back({p.key(), p.value()});
  baton::AdamW opt(named, config->optim);
  auto group = baton::ProcessGroupHandle::Create(baton::DistEnv{}, false);
  baton::TrainStepper stepper(model, &opt, group.get(), config.value(), eps[0].shape, torch::kFloat32,
                              torch::kCPU);
  stepper.Step(micro, 0, frames, 0.0, false);  // warm-up (allocator, thread pool)
  double best = 1e300;
  baton::StepStats st;
  for (int64_t r = 0; r < reps; ++r) {
    st = stepper.Step(micro, r + 1, frames, 0.0, false);
    best = std::min(best, st.seconds);
  }
  nlohmann::ordered_json j{{"case", "throughput"}, {"batch", batch}, {"micro_batches", micro.size()},
                           {"episodes", episodes}, {"valid_tokens", st.tokens},
                           {"padded_tokens", st.padded_tokens}, {"best_step_seconds", best},
                           {"tokens_per_s", double(st.tokens) / best},
                           {"threads", torch::get_num_threads()}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"baton-bench-trainer"};
  app.require_subcommand(1);
  int64_t tokens = 4096, window = 32, chunk = 2, batch = 4, episodes = 16, reps = 3;
  std::string path = "sparse", config;
  auto* att = app.add_subcommand("attention", "Masked self-attention forward + backward");
  att->add_option("--tokens", tokens);
  att->add_option("--path", path)->check(CLI::IsMember({"sparse", "dense"}));
  att->add_option("--window", window);
  att->add_option("--chunk", chunk);
  auto* thr = app.add_subcommand("throughput", "Training tokens/s at a micro-batch size");
  thr->add_option("--config", config)->required();
  thr->add_option("--batch", batch);
  thr->add_option("--episodes", episodes);
  thr->add_option("--reps", reps);
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  if (att->parsed()) return Attention(tokens, path, window, chunk);
  return Throughput(config, batch, episodes, reps);
}
