// `baton-train sampler-stats`: padding waste and shape count of a length-bucketed plan, from the
// dataset's metadata alone.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "trainer/data/dataset_index.h"
#include "trainer/data/sampler_stats.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  std::string data;
  SamplerOptions sampler;
  int64_t pad_multiple = 8;
  int64_t epoch = 0;
  std::string plan = "global";
  bool json = false;
};
}  // namespace

void RegisterSamplerStats(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("sampler-stats", "Padding waste and shapes of a sampler plan");
  cmd->add_option("--data", a->data, "Dataset folder")->required();
  cmd->add_option("--batch-size", a->sampler.batch_size, "Episodes per micro-batch")->required();
  cmd->add_option("--world-size", a->sampler.world_size, "Data-parallel ranks")->required();
  cmd->add_option("--pad-multiple", a->pad_multiple, "Pad F to a multiple of this")->required();
  cmd->add_option("--pool-factor", a->sampler.pool_factor, "Pool = batch * factor")->required();
  cmd->add_option("--seed", a->sampler.seed, "Sampler seed")->required();
  cmd->add_option("--epoch", a->epoch, "Epoch")->capture_default_str();
  cmd->add_option("--rank", a->sampler.rank, "Rank to report")->capture_default_str();
  cmd->add_option("--plan", a->plan, "global | per_rank")
      ->check(CLI::IsMember(Words<SamplerPlan>()))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([=] {
    *selected = [=]() -> int {
      const SamplerOptions& o = a->sampler;
      if (o.batch_size < 1 || o.world_size < 1 || o.pool_factor < 1 || a->pad_multiple < 1 ||
          o.rank < 0 || o.rank >= o.world_size || a->epoch < 0) {
        std::cerr << "baton-train sampler-stats: sizes must be >= 1, 0 <= rank < world size, "
                     "epoch >= 0\n";
        return kExitUsage;
      }
      auto index = LoadDatasetIndex(a->data);
      if (!index.ok()) {
        std::cerr << "baton-train sampler-stats: " << index.status().ToString() << "\n";
        return index.status().code() == Code::kNotFound ? kExitData : index.status().exit_code();
      }
      a->sampler.plan = *Find<SamplerPlan>(a->plan);  // --plan is checked against its words
      const SamplerStats s =
          ComputeSamplerStats(index->BucketKeys(), a->sampler, a->epoch, a->pad_multiple);
      if (a->json) {
        nlohmann::ordered_json j{{"episodes", s.episodes},
                                 {"batches_per_epoch", s.batches_per_epoch},
                                 {"padding_waste", s.padding_waste},
                                 {"distinct_shapes", s.distinct_shapes},
                                 {"min_frames", s.min_frames},
                                 {"max_frames", s.max_frames},
                                 {"padding_waste_all_ranks", s.padding_waste_all_ranks},
                                 {"distinct_shapes_all_ranks", s.distinct_shapes_all_ranks},
                                 {"shapes", s.shapes},
                                 {"plan", a->plan},
                                 {"rank", o.rank},
                                 {"world_size", o.world_size},
                                 {"batch_size", o.batch_size},
                                 {"pool_factor", o.pool_factor},
                                 {"pad_multiple", a->pad_multiple},
                                 {"epoch", a->epoch},
                                 {"plan_seconds", s.plan_seconds}};
        std::cout << j.dump() << "\n";
        return kExitOk;
      }
      std::printf("episodes          %lld (F %lld..%lld)\n", (long long)s.episodes,
                  (long long)s.min_frames, (long long)s.max_frames);
      std::printf(
          "plan              %s: world %lld, batch %lld, pool factor %lld, pad multiple "
          "%lld, epoch %lld\n",
          a->plan.c_str(), (long long)o.world_size, (long long)o.batch_size,
          (long long)o.pool_factor, (long long)a->pad_multiple, (long long)a->epoch);
      std::printf("batches/epoch     %lld per rank\n", (long long)s.batches_per_epoch);
      std::printf("padding waste     %.2f %% (rank %lld), %.2f %% (all ranks)\n",
                  100 * s.padding_waste, (long long)o.rank, 100 * s.padding_waste_all_ranks);
      std::printf("distinct shapes   %lld (rank %lld), %lld (all ranks)\n",
                  (long long)s.distinct_shapes, (long long)o.rank,
                  (long long)s.distinct_shapes_all_ranks);
      std::printf("plan build        %.3f ms\n", 1e3 * s.plan_seconds);
      return kExitOk;
    };
  });
}

}  // namespace baton
