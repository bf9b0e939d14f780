// Error bounds derived from a dtype's precision, for every check that compares a low-precision
// computation with a reference (the attention bench's --check, verify-packing's bf16 verdict, the
// GPU check). A bound here is a formula in the dtype's unit roundoff and the computation's
// reduction lengths, never a number fitted to one machine's kernels: CPUs round bf16 differently
// (an AVX2-only EPYC and an AVX-512 Xeon disagree in the last bits), and the bound must hold on
// all of them.
//
// The model, first order, each rounding a relative error of at most u (round to nearest):
// - Every tensor the computation stores in the dtype (a cast input, a matmul's output, scores,
//   probabilities, an activation) is rounded once. With the errors independent and of mean zero,
//   normwise over a whole tensor they add in quadrature: u * sqrt(roundings).
// - A reduction of n terms accumulates in the accumulation dtype (float32 for bf16 and fp16: every
//   kernel autocast reaches on the CPU and on CUDA accumulates in float32; the dtype itself
//   otherwise), and adds u_acc * sqrt(n), the rms of n independent roundings relative to the
//   sum of the magnitudes.
// - kRoundingMargin covers the spread of the normwise error around that rms and the chain's
//   amplification.
// Owned by the trainer's checks; torch-free so the test scripts can restate the same formula.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace baton {

// Round-to-nearest unit roundoff: half the distance from 1 to the next number (2^-p for p
// significand bits, the implicit one included). 0 for an unknown name.
constexpr double UnitRoundoff(std::string_view dtype) {
  if (dtype == "bfloat16") return 1.0 / 256;              // 8 significand bits
  if (dtype == "float16") return 1.0 / 2048;              // 11
  if (dtype == "float32") return 1.0 / 16777216;          // 24
  if (dtype == "float64") return 1.0 / 9007199254740992;  // 53
  return 0;
}

// The spread around the rms, and the amplification of a chain: two.
inline constexpr double kRoundingMargin = 2.0;

// The unit roundoff of the sums a kernel of `dtype` accumulates in.
constexpr double AccumulationRoundoff(std::string_view dtype) {
  return dtype == "bfloat16" || dtype == "float16" ? UnitRoundoff("float32") : UnitRoundoff(dtype);
}

// Normwise relative error bound of a computation in `dtype` that rounds `roundings` stored
// tensors and sums over `reductions` (each a length).
inline double RoundingBound(std::string_view dtype, const std::vector<int64_t>& reductions,
                            int64_t roundings) {
  double sums = 0;
  for (int64_t n : reductions) sums += std::sqrt(double(n > 0 ? n : 1));
  return kRoundingMargin * (UnitRoundoff(dtype) * std::sqrt(double(roundings > 0 ? roundings : 1)) +
                            AccumulationRoundoff(dtype) * sums);
}

}  // namespace baton
