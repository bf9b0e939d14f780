// `baton-train lerobot-stats DIR --episode N`: LeRobot's per-episode column statistics computed
// from the episode's parquet, to check the parquet reader against meta/episodes_stats.jsonl.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "trainer/lerobot/episode_stats.h"
#include "trainer/lerobot/lerobot_meta.h"
#include "trainer/tools/commands.h"

namespace baton {

namespace {
struct Args {
  std::string dir;
  int64_t episode = 0;
  bool json = false;
};

nlohmann::json Values(const std::vector<double>& v, bool integer) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) {
    if (integer)
      a.push_back(int64_t(x));
    else
      a.push_back(x);
  }
  return a;
}
}  // namespace

void RegisterLeRobotStats(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "lerobot-stats", "Per-column min/max/mean/std/count of a LeRobot episode's parquet");
  cmd->add_option("dir", a->dir, "LeRobot v2.1 dataset folder")->required();
  cmd->add_option("--episode", a->episode, "Episode index")->required();
  cmd->add_flag("--json", a->json, "Print one JSON line like meta/episodes_stats.jsonl");
  cmd->callback([=] {
    *selected = [=]() -> int {
      auto fail = [](const Status& st) {
        std::cerr << "baton-train lerobot-stats: " << st.ToString() << "\n";
        return st.code() == Code::kNotFound ? kExitData : st.exit_code();
      };
      auto ds = LoadLeRobotDataset(a->dir);
      if (!ds.ok()) return fail(ds.status());
      const LeRobotEpisode* ep = ds->Find(a->episode);
      if (!ep) {
        return fail(Status::Data(a->dir + "/meta/episodes.jsonl: no episode " +
                                 std::to_string(a->episode)));
      }
      std::vector<std::string> skipped;
      auto stats = ComputeParquetStats(ds->ParquetPath(a->episode), &skipped);
      if (!stats.ok()) return fail(stats.status());
      if (a->json) {
        nlohmann::ordered_json cols = nlohmann::ordered_json::object();
        for (const auto& s : stats.value()) {
          cols[s.name] = {{"min", Values(s.min, s.integer)},
                          {"max", Values(s.max, s.integer)},
                          {"mean", Values(s.mean, false)},
                          {"std", Values(s.std, false)},
                          {"count", {s.count}}};
        }
        nlohmann::ordered_json j{{"episode_index", a->episode}, {"stats", cols}};
        if (!skipped.empty()) j["skipped_columns"] = skipped;
        std::cout << j.dump() << "\n";
        return kExitOk;
      }
      std::printf("episode %lld: %s\n", static_cast<long long>(a->episode),
                  ds->ParquetPath(a->episode).c_str());
      for (const auto& s : stats.value()) {
        std::printf("%-24s count %lld, %zu element(s)\n", s.name.c_str(),
                    static_cast<long long>(s.count), s.min.size());
        for (size_t k = 0; k < s.min.size(); ++k) {
          std::printf("  [%2zu] min %-14.8g max %-14.8g mean %-14.8g std %.8g\n", k, s.min[k],
                      s.max[k], s.mean[k], s.std[k]);
        }
      }
      for (const auto& s : skipped) std::printf("skipped (unsupported type): %s\n", s.c_str());
      return kExitOk;
    };
  });
}

}  // namespace baton
