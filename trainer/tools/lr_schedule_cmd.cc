// `baton-train lr-schedule`: prints the learning rate the trainer uses at each step of a segment.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "schema/exit_codes.h"
#include "schema/lr_schedule.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  double lr = 0;
  int64_t warmup = 0, step0 = 0, resume_warmup = -1, steps = 0;
  bool json = false;
};
}  // namespace

void RegisterLrSchedule(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("lr-schedule", "Print lr(step) for a segment");
  cmd->add_option("--lr", a->lr, "Base learning rate")->required();
  cmd->add_option("--warmup", a->warmup, "Warmup steps")->required();
  cmd->add_option("--step0", a->step0, "First step of the segment (a resume's checkpoint step)");
  cmd->add_option("--resume-warmup", a->resume_warmup,
                  "K: multiply by min(1, (s+1)/K) (weights-only resume)");
  cmd->add_option("--steps", a->steps,
                  "Steps to print (default: warmup + resume warmup, at least 1)");
  cmd->add_flag("--json", a->json, "A JSON list of {s, step, lr}");
  cmd->callback([=] {
    *selected = [=]() -> int {
      if (a->lr <= 0 || a->warmup < 0 || a->step0 < 0 || a->steps < 0 || a->resume_warmup == 0) {
        std::fprintf(stderr,
                     "baton-train lr-schedule: need --lr > 0, --warmup >= 0, --step0 >= 0, "
                     "--resume-warmup >= 1 when given\n");
        return kExitUsage;
      }
      LrSchedule s{a->lr, a->warmup, a->step0, a->resume_warmup > 0 ? a->resume_warmup : 0};
      const int64_t n = a->steps > 0
                            ? a->steps
                            : std::max<int64_t>(1, std::max(a->warmup - a->step0, int64_t(0)) +
                                                       std::max<int64_t>(a->resume_warmup, 0));
      if (a->json) {
        nlohmann::json out = nlohmann::json::array();
        for (int64_t i = 0; i < n; ++i)
          out.push_back({{"s", i}, {"step", a->step0 + i}, {"lr", s.At(a->step0 + i)}});
        std::printf("%s\n", out.dump().c_str());
      } else {
        std::printf("%8s %8s %14s\n", "s", "step", "lr");
        for (int64_t i = 0; i < n; ++i) {
          std::printf("%8lld %8lld %14.6e\n", (long long)i, (long long)(a->step0 + i),
                      s.At(a->step0 + i));
        }
      }
      return kExitOk;
    };
  });
}

}  // namespace baton
