// `baton-train data-check`: reads a dataset the way training does — sampler plan, background
// prefetch, read + pad-collate — and reports what it saw. Every corrupt, truncated or missing
// episode file and every episode holding a NaN/Inf is reported, each naming the file (and the
// tensor), and the check ends with a data error (exit 65); the good episodes are still read, so
// one run lists every bad one.
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schema/padding_waste.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/length_bucket_sampler.h"
#include "trainer/data/pad_collate.h"
#include "trainer/data/prefetch_loader.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  std::string data;
  SamplerOptions sampler;
  int64_t pad_multiple = 8;
  int64_t prefetch = 2;
  int64_t limit = 0;
  bool json = false;
};

// What one epoch's read saw.
struct EpochRead {
  int64_t batches = 0, episodes = 0, valid = 0, padded = 0, bytes = 0;
  std::vector<std::string> problems;  // one per bad episode, in plan order
  double seconds = 0;
};

// Reads the plan's first `count` batches through the prefetching loader, as training does. A
// data problem is kept and the read goes on; any other read error fails fast.
EpochRead ReadEpoch(const Args& a, std::shared_ptr<const DatasetIndex> index, const EpochPlan& plan,
                    int64_t count) {
  const int64_t pad_multiple = a.pad_multiple;
  EpochRead r;
  const auto t0 = std::chrono::steady_clock::now();
  std::mutex mu;
  PrefetchLoader<PaddedBatch> loader(
      [&, index](int64_t k) {
        std::vector<EpisodeData> eps;
        for (int64_t i : plan.batch(k)) {
          auto ep = ReadEpisode(*index, i);
          if (ep.ok()) {
            eps.push_back(std::move(ep).value());
          } else if (ep.status().exit_code() == kExitData) {
            std::lock_guard<std::mutex> lock(mu);
            r.problems.push_back(ep.status().ToString());
          } else {
            FailAt(__FILE__, __LINE__, ep.status(),
                   "the dataset folder could not be read (not a data problem); check "
                   "permissions and the filesystem");
          }
        }
        return eps.empty() ? PaddedBatch{} : PadCollate(eps, pad_multiple);
      },
      count, a.prefetch);
  while (auto batch = loader.Next()) {
    ++r.batches;
    if (!batch->valid_frames.defined()) continue;
    r.episodes += batch->valid_frames.size(0);
    r.valid += batch->valid_frames.sum().item<int64_t>();
    r.padded += batch->padded_frames * batch->valid_frames.size(0);
    for (const auto* t : {&batch->latents, &batch->actions, &batch->actions_mask, &batch->text}) {
      r.bytes += t->numel() * static_cast<int64_t>(t->element_size());
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

int RunDataCheck(const Args& a) {
  if (a.sampler.batch_size < 1 || a.sampler.pool_factor < 1 || a.pad_multiple < 1) {
    std::fprintf(stderr, "baton-train data-check: sizes must be >= 1\n");
    return kExitUsage;
  }
  auto loaded = LoadDatasetIndex(a.data);
  if (!loaded.ok()) {
    BATON_FAIL(kExitData, loaded.status().ToString(), "point --data at a dataset folder");
  }
  auto index = std::make_shared<const DatasetIndex>(std::move(loaded).value());
  const EpochPlan plan = LengthBucketBatchSampler::Plan(index->BucketKeys(), a.sampler, 0);
  const int64_t count = a.limit > 0 ? std::min(a.limit, plan.num_batches()) : plan.num_batches();
  const EpochRead r = ReadEpoch(a, index, plan, count);
  // padded counts every frame of the padded batches, valid ones included.
  const double waste = r.padded ? PaddingWaste(double(r.valid), double(r.padded - r.valid)) : 0.0;
  if (a.json) {
    std::printf("%s\n", nlohmann::ordered_json{{"batches", r.batches},
                                               {"episodes", r.episodes},
                                               {"valid_frames", r.valid},
                                               {"padded_frames", r.padded},
                                               {"padding_waste", waste},
                                               {"bytes", r.bytes},
                                               {"seconds", r.seconds},
                                               {"bad_episodes", r.problems}}
                            .dump()
                            .c_str());
  } else {
    std::printf(
        "read %lld batches (%lld episodes) in %.2f s: %.1f batches/s, %.1f MB/s of "
        "padded tensors, padding waste %.2f %%\n",
        (long long)r.batches, (long long)r.episodes, r.seconds, r.batches / r.seconds,
        r.bytes / r.seconds / 1e6, 100 * waste);
  }
  if (!r.problems.empty()) {
    for (const auto& p : r.problems)
      std::fprintf(stderr, "baton-train data-check: %s\n", p.c_str());
    std::fprintf(stderr, "baton-train data-check: %zu bad episode(s); regenerate or remove them\n",
                 r.problems.size());
    return kExitData;
  }
  return kExitOk;
}
}  // namespace

void RegisterDataCheck(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "data-check", "Read one epoch through the prefetching loader and pad-collate");
  cmd->add_option("--data", a->data, "Dataset folder")->required();
  cmd->add_option("--batch-size", a->sampler.batch_size, "Episodes per batch")
      ->capture_default_str();
  cmd->add_option("--pad-multiple", a->pad_multiple, "Pad F to a multiple of this")
      ->capture_default_str();
  cmd->add_option("--pool-factor", a->sampler.pool_factor, "Pool = batch * factor")
      ->capture_default_str();
  cmd->add_option("--seed", a->sampler.seed, "Sampler seed")->capture_default_str();
  cmd->add_option("--prefetch", a->prefetch, "Batches read ahead")->capture_default_str();
  cmd->add_option("--limit", a->limit, "Stop after this many batches (0 = whole epoch)")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->callback([=] { *selected = [=] { return RunDataCheck(*a); }; });
}

}  // namespace baton
