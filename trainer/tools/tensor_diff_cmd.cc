// `baton-train tensor-diff A B`: compares every tensor of two safetensors files (float64 math).
// Exit 0 when every tensor's max|a - b| / max|b| is within --max-rel (default 0: bit for bit),
// 1 otherwise, 65 when a file is unreadable or the tensor names differ.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  std::string a, b;
  double max_rel = 0.0;
};
}  // namespace

void RegisterTensorDiff(CLI::App& app, CommandFn* selected) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("tensor-diff", "Compare two safetensors files tensor by tensor");
  cmd->add_option("a", args->a, "First file")->required();
  cmd->add_option("b", args->b, "Second file (the reference)")->required();
  cmd->add_option("--max-rel", args->max_rel, "Largest relative difference accepted")->capture_default_str();
  cmd->callback([=] {
    *selected = [=]() -> int {
      auto fa = SafetensorsFile::Open(args->a), fb = SafetensorsFile::Open(args->b);
      for (const auto* f : {&fa, &fb}) {
        if (!f->ok()) {
          std::fprintf(stderr, "baton-train tensor-diff: %s\n", f->status().ToString().c_str());
          return kExitData;
        }
      }
      double worst = 0;
      std::string worst_name;
      int64_t identical = 0, total = 0;
      for (const auto& t : fa.value()->tensors()) {
        const StTensorInfo* u = fb.value()->Find(t.name);
        if (u == nullptr || u->shape != t.shape) {
          std::fprintf(stderr, "baton-train tensor-diff: tensor '%s' is missing or shaped differently in %s\n",
                       t.name.c_str(), args->b.c_str());
          return kExitData;
        }
        ++total;
        const bool same_bytes = t.dtype == u->dtype && t.end - t.begin == u->end - u->begin &&
                                std::memcmp(fa.value()->Data(t), fb.value()->Data(*u), t.end - t.begin) == 0;
        if (same_bytes) {
          ++identical;
          continue;
        }
        auto va = fa.value()->ReadFloat32(t.name).value();
        auto vb = fb.value()->ReadFloat32(t.name).value();
        double diff = 0, scale = 1e-300;
        // Exact float64 comparison needs the raw doubles, not the float32 view.
        if (t.dtype == StDType::kF64 && u->dtype == StDType::kF64) {
          const auto* pa = reinterpret_cast<const double*>(fa.value()->Data(t));
          const auto* pb = reinterpret_cast<const double*>(fb.value()->Data(*u));
          for (int64_t i = 0; i < t.numel(); ++i) {
            double x, y;
            std::memcpy(&x, pa + i, 8);
            std::memcpy(&y, pb + i, 8);
            diff = std::max(diff, std::abs(x - y));
            scale = std::max(scale, std::abs(y));
          }
        } else {
          for (size_t i = 0; i < va.size(); ++i) {
            diff = std::max(diff, double(std::abs(va[i] - vb[i])));
            scale = std::max(scale, double(std::abs(vb[i])));
          }
        }
        const double rel = diff / scale;
        if (rel >= worst) {
          worst = rel;
          worst_name = t.name;
        }
      }
      if (fb.value()->tensors().size() != fa.value()->tensors().size()) {
        std::fprintf(stderr, "baton-train tensor-diff: the files hold different tensor sets\n");
        return kExitData;
      }
      std::printf("%lld tensors, %lld bit-identical; max relative difference %.3e%s%s\n", (long long)total,
                  (long long)identical, worst, worst_name.empty() ? "" : " in ", worst_name.c_str());
      return worst <= args->max_rel ? kExitOk : kExitFailure;
    };
  });
}

}  // namespace baton
