// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011), keyed by (seed, stream).
//
// Every random draw in the trainer comes from a stream named by what it is for — the sampler's
// shuffle of an epoch, the noise of one episode at one step — so a draw never depends on how many
// draws happened before it elsewhere. That is what makes packed == unpacked and resumed ==
// uninterrupted exact: no hidden generator state to save or to advance in the same order.
// Header-only, no libtorch; a RandomStream is a small value (copy it to fork), not thread-safe.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace baton {

// One Philox4x32 block: 10 rounds over a 128-bit counter with a 64-bit key.
inline std::array<uint32_t, 4> PhiloxBlock(std::array<uint32_t, 4> ctr,
                                           std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = uint64_t(kM0) * ctr[0];
    const uint64_t p1 = uint64_t(kM1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ key[1],
           uint32_t(p0)};
  }
  return ctr;
}

// SplitMix64 finaliser: spreads a stream name over 64 bits.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// What a stream is for; part of the stream name so two purposes never share draws.
enum class StreamTag : uint64_t {
  kSamplerShuffle = 1,
  kSamplerBatchOrder = 2,
  kSynthData = 3,
  kEpisodeNoise = 4,    // per (step, episode): timesteps, noise
  kMicrostepShape = 5,  // per (step, micro-step): chunk size, window
  kModelInit = 6,
  kTextDropout = 7,  // per (step, episode): whether the text is the empty prompt's
  kEvalSplit = 8,    // eval.fraction's draw of the held-out episodes
};

class RandomStream {
 public:
  // Stream (tag, a, b) of `seed`. a and b are the coordinates: (epoch, rank), (step, episode)...
  RandomStream(uint64_t seed, StreamTag tag, uint64_t a = 0, uint64_t b = 0)
      : key_{uint32_t(seed), uint32_t(seed >> 32)},
        stream_(Mix64(Mix64(Mix64(uint64_t(tag)) ^ a) ^ Mix64(b + 0x632BE59BD9B4E019ull))) {}

  uint32_t NextU32() {
    if (used_ == 4) Refill();
    return block_[used_++];
  }
  uint64_t NextU64() {
    const uint64_t hi = NextU32();
    return (hi << 32) | NextU32();
  }
  // Uniform in [0, n), unbiased (Lemire's multiply-shift with rejection). n >= 1.
  uint64_t UniformInt(uint64_t n) {
    if (n <= 0xFFFFFFFFull) {
      uint64_t m = uint64_t(NextU32()) * n;
      uint32_t low = uint32_t(m);
      if (low < n) {
        const uint32_t threshold = uint32_t(-uint32_t(n)) % uint32_t(n);
        while (low < threshold) {
          m = uint64_t(NextU32()) * n;
          low = uint32_t(m);
        }
      }
      return m >> 32;
    }
    // Wide ranges: plain rejection sampling on 64 bits.
    const uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % n);
    uint64_t x;
    do {
      x = NextU64();
    } while (x >= limit);
    return x % n;
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return double(NextU64() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; both values used).
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1;
    do {
      u1 = Uniform();
    } while (u1 <= 0.0);
    const double u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

 private:
  void Refill() {
    block_ = PhiloxBlock(
        {uint32_t(index_), uint32_t(index_ >> 32), uint32_t(stream_), uint32_t(stream_ >> 32)},
        key_);
    ++index_;
    used_ = 0;
  }

  std::array<uint32_t, 2> key_;
  uint64_t stream_;
  uint64_t index_ = 0;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace baton
