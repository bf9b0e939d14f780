// baton-bench-trainer: the trainer's benchmark cases, one case per process so peak memory is
// the case's own. bench/trainer_bench.sh runs them side by side and prints the ratios.
//
//   attention --tokens T --path sparse|dense   time and peak RSS of one masked self-attention
//                                              forward + backward over a packed row of T tokens
//   throughput --config CFG --batch 1,4        training tokens/s over the first 16 episodes as
//                                              micro-batches of each size, timed in turns with
//                                              a float32 GEMM; the model FLOPs per valid token
//                                              and attention ops per layer (--profile: time per
//                                              top-level op of one step)
//   gemm --rows M --inner K --cols N           torch::mm FLOP/s of that shape, float32
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "schema/run_config.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/empty_text.h"
#include "trainer/data/pad_collate.h"
#include "trainer/dist/process_group.h"
#include "trainer/model/attention.h"
#include "trainer/model/op_counter.h"
#include "trainer/objective/flow_matching.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/train_step.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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
  auto q = torch::randn({layout.tokens, H, hd}, opts),
       k = torch::randn({layout.tokens, H, hd}, opts),
       v = torch::randn({layout.tokens, H, hd}, opts);
  const auto t_plan = Clock::now();
  baton::LayoutTensors lt =
      baton::MakeLayoutTensors(layout, hd, 10000.0, torch::kCPU, torch::kFloat32);
  const double plan_s = Since(t_plan);
  const int64_t allowed = baton::AllowedPairs(lt);
  const int64_t computed = path == "dense" ? layout.tokens * layout.tokens : lt.computed_pairs;
  const int64_t rss0 = baton::PeakRssBytes();
  const auto t0 = Clock::now();
  auto out = path == "dense" ? baton::DenseMaskedAttention(q, k, v, layout)
                             : baton::BlockSparseAttention(q, k, v, lt);
  const double fwd_s = Since(t0);
  out.sum().backward();
  const double secs = Since(t0);
  nlohmann::ordered_json j{{"case", "attention"},
                           {"path", path},
                           {"tokens", layout.tokens},
                           {"window", window},
                           {"chunk", chunk},
                           {"seconds", secs},
                           {"forward_seconds", fwd_s},
                           {"plan_seconds", plan_s},
                           {"peak_rss_bytes", baton::PeakRssBytes()},
                           {"rss_growth_bytes", baton::PeakRssBytes() - rss0},
                           {"computed_pairs", computed},
                           {"allowed_pairs", allowed},
                           {"calls", path == "dense" ? 1 : int64_t(lt.calls.size())}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

// Time per top-level op (forward ops by name, backward by autograd node), on every thread.
class OpProfile {
 public:
  OpProfile() {
    Self() = this;
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(&Enter, &Exit)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  ~OpProfile() {
    at::removeCallback(handle_);
    Self() = nullptr;
  }
  nlohmann::ordered_json Top(double total_s, size_t n) const {
    std::vector<std::pair<double, std::string>> rows;
    double ops_s = 0;
    for (const auto& [name, e] : time_) {
      rows.push_back({e.first, name});
      ops_s += e.first;
    }
    std::sort(rows.rbegin(), rows.rend());
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (size_t i = 0; i < std::min(n, rows.size()); ++i) {
      j.push_back({{"op", rows[i].second},
                   {"seconds", rows[i].first},
                   {"calls", time_.at(rows[i].second).second}});
    }
    j.push_back({{"op", "(outside any op)"}, {"seconds", total_s - ops_s}, {"calls", 0}});
    return j;
  }

 private:
  struct Frame {
    int depth = 0;
    Clock::time_point start;
  };
  static OpProfile*& Self() {
    static OpProfile* p = nullptr;
    return p;
  }
  static Frame& Local() {
    thread_local Frame f;
    return f;
  }
  static std::unique_ptr<at::ObserverContext> Enter(const at::RecordFunction&) {
    if (Local().depth++ == 0) Local().start = Clock::now();
    return nullptr;
  }
  static void Exit(const at::RecordFunction& fn, at::ObserverContext*) {
    if (--Local().depth != 0) return;
    const double s = Since(Local().start);
    std::lock_guard<std::mutex> lock(Self()->mu_);
    auto& e = Self()->time_[fn.name()];
    e.first += s;
    ++e.second;
  }
  std::mutex mu_;
  std::map<std::string, std::pair<double, int64_t>> time_;
  at::CallbackHandle handle_;
};

// Linear-layer FLOPs per token of one training step (forward 2, backward 4 per weight): the
// token-wise weights (blocks, time projection, time MLP, in/out layers) from the model dims.
double DenseFlopsPerToken(const baton::ModelDims& d) {
  const double D = double(d.dim), F = double(d.ffn_dim);
  const double block = 4 * D * D + 2 * D * D + 2 * D * F;            // self q k v o, cross q o, FFN
  const double shared = 6 * D * D + double(d.freq_dim) * D + D * D;  // time projection, time MLP
  const double io = double(d.channels * d.patch * d.patch) * D;      // in + out, about
  return 6.0 * (double(d.layers) * block + shared + io);
}

// Top-level ops of one layer's attention (self + text cross), forward and backward, for a row.
int64_t AttentionOpsPerLayer(const baton::MicroBatch& mb, const baton::ModelDims& d) {
  const int64_t T = mb.layout.tokens, H = d.heads, hd = d.head_dim();
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true);
  auto q = torch::randn({T, H, hd}, opts), k = torch::randn({T, H, hd}, opts),
       v = torch::randn({T, H, hd}, opts);
  auto ck = torch::randn({mb.layout.batch, mb.inputs.text.size(1), H, hd}, opts);
  baton::OpCounter counter;
  auto out = baton::BlockSparseAttention(q, k, v, mb.layout_tensors) +
             baton::TextCrossAttention(q, ck, ck, mb.layout_tensors);
  out.sum().backward();
  return counter.ops();
}

int Gemm(int64_t m, int64_t k, int64_t n, int64_t reps) {
  torch::manual_seed(0);
  auto a = torch::randn({m, k}), b = torch::randn({k, n});
  torch::mm(a, b);  // warm-up
  double best = 1e300;
  for (int64_t r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    auto c = torch::mm(a, b);
    best = std::min(best, Since(t0));
  }
  nlohmann::ordered_json j{{"case", "gemm"},
                           {"dtype", "float32"},
                           {"m", m},
                           {"k", k},
                           {"n", n},
                           {"best_seconds", best},
                           {"flops_per_s", 2.0 * double(m * k * n) / best},
                           {"threads", torch::get_num_threads()}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

double GemmSeconds(const torch::Tensor& a, const torch::Tensor& b) {
  const auto t0 = Clock::now();
  auto c = torch::mm(a, b);
  return Since(t0);
}

nlohmann::ordered_json GemmJson(int64_t n, double best) {
  return {{"case", "gemm"},
          {"dtype", "float32"},
          {"m", n},
          {"k", n},
          {"n", n},
          {"best_seconds", best},
          {"flops_per_s", 2.0 * double(n * n * n) / best},
          {"threads", torch::get_num_threads()}};
}

// Each batch size in `batches` over the same episodes and the same model, timed in turns (one
// step of each per round, then a float32 n x n GEMM), so load that comes and goes during the run
// hits every case alike; best of `reps` rounds each. One JSON line per batch size, then the GEMM.
int Throughput(const std::string& config_path, const std::vector<int64_t>& batches,
               int64_t episodes, int64_t reps, bool profile, int64_t gemm_n) {
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
  // Batches of similar lengths, as the length-bucketing sampler forms them in training: packing
  // episodes of any lengths would pad every row to its longest one.
  std::stable_sort(
      eps.begin(), eps.end(),
      [](const baton::EpisodeData& a, const baton::EpisodeData& b) { return a.frames < b.frames; });
  torch::manual_seed(0);
  baton::VideoActionModel model(baton::MakeModelDims(config.value(), eps[0].shape));
  baton::AdamW opt(baton::TrainableParameters(model), config->optim);
  auto group = baton::ProcessGroupHandle::Create(baton::DistEnv{}, false);
  // The dataset's empty prompt, for text dropout, as training reads it.
  torch::Tensor empty_text;
  if (config->objective.text_dropout > 0) {
    auto text = baton::ReadEmptyText(index.dir, eps[0].shape);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
      return 65;
    }
    empty_text = torch::from_blob(text->data(), {eps[0].shape.text_len, eps[0].shape.text_dim},
                                  torch::kFloat32)
                     .clone();
  }
  baton::TrainStepper stepper(model, &opt, group.get(), config.value(), eps[0].shape,
                              torch::kFloat32, torch::kCPU, empty_text);
  const baton::ModelDims dims = model->dims();

  struct Case {
    int64_t batch = 1;
    std::vector<baton::PaddedBatch> micro;
    nlohmann::ordered_json json;
    double best = 1e300;  // --reps 0: the plan figures only, no timing
  };
  std::vector<Case> cases;
  for (const int64_t batch : batches) {
    Case c;
    c.batch = batch;
    for (int64_t m = 0; m < episodes / batch; ++m) {
      c.micro.push_back(baton::PadCollate({eps.begin() + m * batch, eps.begin() + (m + 1) * batch},
                                          config->data.pad_multiple));
    }
    // Model FLOPs per valid token: the linear layers from the dims (padded tokens are work but
    // not counted), plus the attention's allowed score entries (q k^T and p v, forward and
    // backward), with the draws of step 1.
    double allowed = 0;
    int64_t ops = 0, calls = 0, computed = 0, valid = 0, padded = 0;
    for (const auto& b : c.micro) {
      const baton::MicroBatch mb = baton::PrepareMicroBatch(
          b, uint64_t(config->run.seed), 1, eps[0].shape, config->objective, dims, torch::kFloat32,
          torch::kCPU, empty_text);
      allowed += double(baton::AllowedPairs(mb.layout_tensors));
      computed += mb.layout_tensors.computed_pairs;
      calls += int64_t(mb.layout_tensors.calls.size());
      ops += AttentionOpsPerLayer(mb, dims);
      valid += mb.tokens;
      padded += mb.padded_tokens;
    }
    const double dense = DenseFlopsPerToken(dims);
    const double attention =
        allowed * double(dims.dim) * 2 * 2 * 3 * double(dims.layers) / double(valid);
    c.json = {{"case", "throughput"},
              {"batch", batch},
              {"micro_batches", c.micro.size()},
              {"episodes", episodes},
              {"dim", dims.dim},
              {"layers", dims.layers},
              {"valid_tokens", valid},
              {"padded_tokens", padded},
              {"flops_per_token", dense + attention},
              {"attention_flops_per_token", attention},
              {"attention_ops_per_layer", ops},
              {"attention_calls_per_layer", calls},
              {"computed_pairs", computed},
              {"allowed_pairs", allowed},
              {"threads", torch::get_num_threads()}};
    cases.push_back(std::move(c));
  }
  auto ga = torch::randn({gemm_n, gemm_n}), gb = torch::randn({gemm_n, gemm_n});
  double gemm_best = 1e300;
  if (reps > 0) {  // warm-up (allocator, thread pool)
    for (auto& c : cases) stepper.Step(c.micro, 0, frames, 0.0, false);
    GemmSeconds(ga, gb);
  }
  for (int64_t r = 0; r < reps; ++r) {
    for (auto& c : cases)
      c.best = std::min(c.best, stepper.Step(c.micro, r + 1, frames, 0.0, false).seconds);
    gemm_best = std::min(gemm_best, GemmSeconds(ga, gb));
  }
  for (auto& c : cases) {
    const double valid = c.json["valid_tokens"].get<double>();
    c.json["best_step_seconds"] = c.best;
    c.json["tokens_per_s"] = valid / c.best;
    c.json["achieved_flops_per_s"] = c.json["flops_per_token"].get<double>() * valid / c.best;
    if (profile) {
      OpProfile prof;
      const auto t0 = Clock::now();
      stepper.Step(c.micro, reps + 1, frames, 0.0, false);
      c.json["profile"] = prof.Top(Since(t0), 12);
    }
    std::printf("%s\n", c.json.dump().c_str());
  }
  std::printf("%s\n", GemmJson(gemm_n, gemm_best).dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"baton-bench-trainer"};
  app.require_subcommand(1);
  int64_t tokens = 4096, window = 32, chunk = 2, episodes = 16, reps = 3;
  std::string path = "sparse", config;
  auto* att = app.add_subcommand("attention", "Masked self-attention forward + backward");
  att->add_option("--tokens", tokens);
  att->add_option("--path", path)->check(CLI::IsMember({"sparse", "dense"}));
  att->add_option("--window", window);
  att->add_option("--chunk", chunk);
  bool profile = false;
  std::vector<int64_t> batches = {1, 4};
  int64_t gemm_n = 1024;
  auto* thr = app.add_subcommand("throughput", "Training tokens/s at micro-batch sizes, in turns");
  thr->add_option("--config", config)->required();
  thr->add_option("--batch", batches, "micro-batch sizes, timed in turns")->delimiter(',');
  thr->add_option("--gemm", gemm_n, "side of the float32 GEMM timed in each round");
  thr->add_option("--episodes", episodes);
  thr->add_option("--reps", reps);
  thr->add_flag("--profile", profile, "time per top-level op of one more step");
  int64_t m = 2048, k = 2048, n = 2048;
  auto* gemm = app.add_subcommand("gemm", "torch::mm FLOP/s, float32");
  gemm->add_option("--rows", m);
  gemm->add_option("--inner", k);
  gemm->add_option("--cols", n);
  gemm->add_option("--reps", reps);
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  if (att->parsed()) return Attention(tokens, path, window, chunk);
  if (gemm->parsed()) return Gemm(m, k, n, reps);
  return Throughput(config, batches, episodes, reps, profile, gemm_n);
}
