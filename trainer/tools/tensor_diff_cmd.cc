// `baton-train tensor-diff A B`: compares every tensor of two safetensors files, B the reference.
// It is the oracle of the bit-exactness tests, so a difference it cannot see is a test that
// cannot fail.
//
// Exit 0 when every tensor is equal, 1 when one differs, 65 when a file is unreadable, the two
// hold different tensor names, or a tensor is shaped differently.
//  - Default (float64 math): a tensor is equal when max|a - b| / max|b| over its finite elements
//    is within --max-rel (default 0) and its NaN and Inf line up: NaN only equals NaN at the same
//    position, +Inf only +Inf, -Inf only -Inf. NaN or Inf facing anything else is a difference,
//    whatever --max-rel says (a NaN tensor never "matches" a finite one).
//  - --bitwise: a tensor is equal when its dtype and every byte are the same (NaN payloads and
//    the sign of zero included). __metadata__ is not compared.
// Each differing tensor gets a line on stdout; the last line sums up.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  std::string a, b;
  double max_rel = 0.0;
  bool bitwise = false;
};

// How one tensor of A compares with its namesake in B (the reference).
struct TensorDiff {
  double rel = 0;  // max |a - b| / max |b| over finite pairs; inf on a NaN/Inf mismatch
  int64_t nonfinite_mismatches = 0;  // elements where NaN or Inf does not face the same value
  int64_t first = -1;                // flat index of the first of them
  double first_a = 0, first_b = 0;
};

TensorDiff CompareValues(const std::vector<double>& a, const std::vector<double>& b) {
  TensorDiff d;
  double diff = 0, scale = 1e-300;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    if (std::isfinite(x) && std::isfinite(y)) {
      diff = std::max(diff, std::abs(x - y));
      scale = std::max(scale, std::abs(y));
      continue;
    }
    const bool same = (std::isnan(x) && std::isnan(y)) || x == y;  // x == y: same-signed Inf
    if (!same) {
      if (d.first < 0) {
        d.first = static_cast<int64_t>(i);
        d.first_a = x;
        d.first_b = y;
      }
      ++d.nonfinite_mismatches;
    }
  }
  d.rel = d.nonfinite_mismatches > 0 ? std::numeric_limits<double>::infinity() : diff / scale;
  return d;
}

// The first byte where two equally long buffers differ, and how many differ; -1 when none.
int64_t FirstDifferentByte(const uint8_t* a, const uint8_t* b, uint64_t n, int64_t* count) {
  int64_t first = -1;
  *count = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++*count;
    }
  }
  return first;
}

// 0 when B holds a tensor of every name and shape A holds, and no others; else kExitData, said
// on stderr.
int CheckSameTensors(const SafetensorsFile& a, const SafetensorsFile& b,
                     const std::string& b_path) {
  for (const auto& t : a.tensors()) {
    const StTensorInfo* u = b.Find(t.name);
    if (u == nullptr || u->shape != t.shape) {
      std::fprintf(stderr,
                   "baton-train tensor-diff: tensor '%s' is missing or shaped differently in %s\n",
                   t.name.c_str(), b_path.c_str());
      return kExitData;
    }
  }
  if (b.tensors().size() != a.tensors().size()) {
    std::fprintf(stderr, "baton-train tensor-diff: the files hold different tensor sets\n");
    return kExitData;
  }
  return 0;
}

// --bitwise: the line of tensor `t` of A whose dtype or bytes differ from `u` of B.
void PrintBitwiseDifference(const SafetensorsFile& a, const StTensorInfo& t,
                            const SafetensorsFile& b, const StTensorInfo& u) {
  if (t.dtype != u.dtype) {
    std::printf("differs: tensor '%s': dtype %s vs %s\n", t.name.c_str(), StDTypeName(t.dtype),
                StDTypeName(u.dtype));
    return;
  }
  const uint64_t na = t.end - t.begin;
  int64_t count = 0;
  const int64_t first = FirstDifferentByte(a.Data(t), b.Data(u), na, &count);
  std::printf(
      "differs: tensor '%s': %lld of %llu bytes differ, the first at byte %lld "
      "(element %lld)\n",
      t.name.c_str(), (long long)count, (unsigned long long)na, (long long)first,
      (long long)(first / int64_t(StDTypeSize(t.dtype))));
}

struct Tally {
  double worst = 0;
  std::string worst_name;
  int64_t identical = 0, differing = 0, total = 0;
};

// Every tensor of A against its namesake in B, each difference said on stdout.
Tally CompareFiles(const SafetensorsFile& a, const SafetensorsFile& b, const Args& args) {
  Tally tally;
  for (const auto& t : a.tensors()) {
    const StTensorInfo& u = *b.Find(t.name);
    ++tally.total;
    const uint64_t na = t.end - t.begin, nb = u.end - u.begin;
    const bool same_bytes =
        t.dtype == u.dtype && na == nb && (na == 0 || std::memcmp(a.Data(t), b.Data(u), na) == 0);
    if (same_bytes) {
      ++tally.identical;
      continue;
    }
    if (args.bitwise) {
      ++tally.differing;
      PrintBitwiseDifference(a, t, b, u);
      continue;
    }
    const TensorDiff d =
        CompareValues(a.ReadFloat64(t.name).value(), b.ReadFloat64(u.name).value());
    if (d.nonfinite_mismatches > 0) {
      std::printf(
          "differs: tensor '%s': %lld element(s) where NaN/Inf do not match, the first "
          "at element %lld (%g vs %g)\n",
          t.name.c_str(), (long long)d.nonfinite_mismatches, (long long)d.first, d.first_a,
          d.first_b);
    }
    if (d.rel > args.max_rel) ++tally.differing;
    if (d.rel >= tally.worst) {
      tally.worst = d.rel;
      tally.worst_name = t.name;
    }
  }
  return tally;
}

int RunTensorDiff(const Args& args) {
  if (!std::isfinite(args.max_rel) || args.max_rel < 0) {
    std::fprintf(stderr, "baton-train tensor-diff: --max-rel %g must be a finite number >= 0\n",
                 args.max_rel);
    return kExitUsage;
  }
  auto fa = SafetensorsFile::Open(args.a), fb = SafetensorsFile::Open(args.b);
  for (const auto* f : {&fa, &fb}) {
    if (!f->ok()) {
      std::fprintf(stderr, "baton-train tensor-diff: %s\n", f->status().ToString().c_str());
      return kExitData;
    }
  }
  const SafetensorsFile& a = *fa.value();
  const SafetensorsFile& b = *fb.value();
  if (const int refused = CheckSameTensors(a, b, args.b); refused != 0) return refused;
  const Tally t = CompareFiles(a, b, args);
  if (args.bitwise) {
    std::printf("%lld tensors, %lld bit-identical, %lld differ (bitwise)\n", (long long)t.total,
                (long long)t.identical, (long long)t.differing);
  } else {
    std::printf("%lld tensors, %lld bit-identical; max relative difference %.3e%s%s\n",
                (long long)t.total, (long long)t.identical, t.worst,
                t.worst_name.empty() ? "" : " in ", t.worst_name.c_str());
  }
  return t.differing == 0 ? kExitOk : kExitFailure;
}
}  // namespace

void RegisterTensorDiff(CLI::App& app, CommandFn* selected) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("tensor-diff", "Compare two safetensors files tensor by tensor");
  cmd->add_option("a", args->a, "First file")->required();
  cmd->add_option("b", args->b, "Second file (the reference)")->required();
  CLI::Option* max_rel =
      cmd->add_option("--max-rel", args->max_rel,
                      "Largest relative difference accepted (NaN/Inf must match exactly)")
          ->capture_default_str();
  cmd->add_flag("--bitwise", args->bitwise, "Equal only with the same dtype and bytes")
      ->excludes(max_rel);
  cmd->callback([=] { *selected = [=] { return RunTensorDiff(*args); }; });
}

}  // namespace baton
