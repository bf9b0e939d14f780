// The cases of baton-bench-trainer, one function each (attention_case.cc, throughput_case.cc,
// gemm_case.cc), with the options trainer_bench.cc reads from the command line. Each prints one
// JSON object per line on stdout and returns the process exit code.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::bench {

struct AttentionOptions {
  int64_t tokens = 4096;
  std::string path = "sparse";  // sparse | dense | sdpa
  std::string device = "cpu";
  std::string dtype = "float32";  // float32 | bfloat16 (bf16 autocast, as training)
  int64_t heads = 2, head_dim = 64;
  int64_t reps = 1;
  int64_t window = 32, chunk = 2;
  bool check = false;  // max_rel_diff of the output against the block-sparse path's
};
int RunAttention(const AttentionOptions& o);

struct ThroughputOptions {
  std::string config;
  std::vector<int64_t> batches = {1, 4};
  std::string device;  // empty: the config's train.device
  int64_t episodes = 16, reps = 3;
  bool profile = false;
  bool op_count = true;
  int64_t gemm_n = 1024;
  double peak_tflops = 0;  // > 0: report mfu against it
};
int RunThroughput(const ThroughputOptions& o);

struct GemmOptions {
  int64_t m = 2048, k = 2048, n = 2048;
  std::string device = "cpu";
  std::string dtype = "float32";
  int64_t reps = 3;
};
int RunGemm(const GemmOptions& o);

// One torch::mm of an m x k by a k x n matrix on `device` in `dtype`, between device barriers,
// seconds; the operands live only for the call (so they are in no other case's peak memory).
double TimeOneGemm(int64_t m, int64_t k, int64_t n, const torch::Device& device,
                   torch::Dtype dtype);

// The gemm line: shape, median and best seconds, FLOP/s from the best.
nlohmann::ordered_json GemmJson(int64_t m, int64_t k, int64_t n, const torch::Device& device,
                                torch::Dtype dtype, const std::vector<double>& seconds);

}  // namespace baton::bench
