// baton-bench-trainer: the trainer's benchmark cases, one case per process so peak memory is
// the case's own. bench/trainer_bench.sh runs them on the CPU side by side and prints the
// ratios; on a GPU machine the same cases run with --device cuda. Each prints one JSON object per
// line on stdout, always with "device" (e.g. "cpu", "cuda:0 NVIDIA H200 (139.8 GiB, sm_90)") and
// "dtype". Exit codes: 0 done, 3 out of memory (the line then has "error": "out of memory"), 69
// --path sdpa on libtorch < 2, 78 --device cuda without a CUDA build or device, or a bad config.
//
//   attention --tokens T --path sparse|dense|sdpa [--device cpu|cuda] [--dtype float32|bfloat16]
//             [--heads H] [--head-dim D] [--reps N] [--window W] [--chunk C] [--check]
//       one masked self-attention forward + backward over a packed row of T tokens (H 2, D 64,
//       float32, 1 rep by default; N > 1 adds an untimed warm-up): "seconds" and
//       "forward_seconds" (medians), "peak_bytes" (CUDA: the allocator's peak over the timed
//       calls; CPU: peak RSS, with "peak_rss_bytes" and "rss_growth_bytes"), computed and
//       allowed score entries; --check adds the output's error against the block-sparse path in
//       float64 on the same inputs: "rel_err" (||out - ref|| / ||ref||), its "rel_err_bound" from
//       "unit_roundoff" and the reductions (head_dim, "max_keys"), and "max_rel_diff"
//       (max |out - ref| / max |ref|). bfloat16 runs under bf16 autocast, as training.
//   throughput --config CFG --batch 1,4 [--device cpu|cuda] [--peak-tflops P] [--no-op-count]
//              [--episodes E] [--reps N] [--gemm G] [--profile]
//       training tokens/s of the trainer's step over the first E episodes as micro-batches of
//       each size, on the config's train.device (or --device) and train.dtype, timed in turns
//       with a G x G GEMM (bf16 on CUDA for a bfloat16 config, else float32): per batch size
//       "best_step_seconds", "step_seconds_median", "tokens_per_s", "achieved_flops_per_s" from
//       the model FLOPs per valid token, "mfu" against P TFLOP/s, "peak_bytes" and
//       "peak_reserved_bytes" of a step, attention ops per layer (not with --no-op-count); then
//       the GEMM's line. --profile: time per top-level op of one more step.
//   gemm --rows M --inner K --cols N [--device cpu|cuda] [--dtype float32|bfloat16] [--reps N]
//       torch::mm of that shape: "median_seconds", "best_seconds", "flops_per_s" from the best.
#include <algorithm>
#include <thread>

#include <CLI/CLI.hpp>

#include "bench/bench_cases.h"
#include "schema/vocabularies.h"

int main(int argc, char** argv) {
  using namespace baton::bench;
  CLI::App app{"baton-bench-trainer"};
  app.require_subcommand(1);
  const auto devices = CLI::IsMember(baton::Words<baton::Device>());
  const auto dtypes = CLI::IsMember({"float32", "bfloat16"});

  AttentionOptions a;
  auto* att = app.add_subcommand("attention", "Masked self-attention forward + backward");
  att->add_option("--tokens", a.tokens);
  att->add_option("--path", a.path)->check(CLI::IsMember({"sparse", "dense", "sdpa"}));
  att->add_option("--device", a.device)->check(devices);
  att->add_option("--dtype", a.dtype)->check(dtypes);
  att->add_option("--heads", a.heads)->check(CLI::PositiveNumber);
  att->add_option("--head-dim", a.head_dim)->check(CLI::PositiveNumber);
  att->add_option("--reps", a.reps, "timed calls (> 1 adds one untimed warm-up)")
      ->check(CLI::PositiveNumber);
  att->add_option("--window", a.window);
  att->add_option("--chunk", a.chunk);
  att->add_flag("--check", a.check,
                "the error against the block-sparse path in float64, with its bound");

  ThroughputOptions t;
  auto* thr = app.add_subcommand("throughput", "Training tokens/s at micro-batch sizes, in turns");
  thr->add_option("--config", t.config)->required();
  thr->add_option("--batch", t.batches, "micro-batch sizes, timed in turns")->delimiter(',');
  thr->add_option("--device", t.device, "default: the config's train.device")->check(devices);
  thr->add_option("--gemm", t.gemm_n, "side of the GEMM timed in each round");
  thr->add_option("--episodes", t.episodes);
  thr->add_option("--reps", t.reps, "timed rounds (0: the plan figures only)");
  thr->add_option("--peak-tflops", t.peak_tflops, "the device's peak TFLOP/s: adds mfu");
  bool no_op_count = false;
  thr->add_flag("--no-op-count", no_op_count, "skip counting the attention ops per layer");
  thr->add_flag("--profile", t.profile, "time per top-level op of one more step");

  GemmOptions g;
  auto* gemm = app.add_subcommand("gemm", "torch::mm FLOP/s");
  gemm->add_option("--rows", g.m);
  gemm->add_option("--inner", g.k);
  gemm->add_option("--cols", g.n);
  gemm->add_option("--device", g.device)->check(devices);
  gemm->add_option("--dtype", g.dtype)->check(dtypes);
  gemm->add_option("--reps", g.reps)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  t.op_count = !no_op_count;

  torch::set_num_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  if (att->parsed()) return RunAttention(a);
  if (gemm->parsed()) return RunGemm(g);
  return RunThroughput(t);
}
