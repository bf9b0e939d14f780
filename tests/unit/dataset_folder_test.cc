// The one LeRobot-folder rule (schema/dataset_folder.h) and its three users: `baton submit`'s
// config check (ParseRunConfig skips the episode count for a LeRobot folder), the trainer's
// dataset index (refuses a LeRobot folder: "import it first") and the importer (reads only a
// LeRobot folder). Each folder below differs from the others in meta/info.json alone, and all
// three users must sort it the way the rule does.
#include "schema/dataset_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "schema/run_config.h"
#include "tests/common/temp_dir.h"
#include "trainer/data/dataset_index.h"
#include "trainer/lerobot/lerobot_meta.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

void Put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

constexpr const char* kLeRobotInfo =
    R"({"codebase_version": "v2.1", "chunks_size": 1000, "fps": 30, "total_episodes": 1,
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"})";

struct Folder {
  const char* name;
  bool lerobot;  // what the rule says
  std::function<void(const fs::path& dir)> make_info;
};
void PrintTo(const Folder& f, std::ostream* os) { *os << f.name; }

const std::vector<Folder>& Folders() {
  static const std::vector<Folder> folders = {
      {"lerobot_v21", true,
       [](const fs::path& d) {
         Put(d / "meta/info.json", kLeRobotInfo);
         Put(d / "meta/tasks.jsonl", R"({"task_index": 0, "task": "t"})"
                                     "\n");
       }},
      // No tasks.jsonl: still LeRobot's info.json (the config check once asked for tasks.jsonl).
      {"lerobot_without_tasks", true,
       [](const fs::path& d) { Put(d / "meta/info.json", kLeRobotInfo); }},
      {"lerobot_v30", true,
       [](const fs::path& d) { Put(d / "meta/info.json", R"({"codebase_version": "v3.0"})"); }},
      {"baton", false,
       [](const fs::path& d) {
         Put(d / "meta/info.json", DatasetShapeJson({4, 2, 2, 3, 4, 2, 8}, 2));
       }},
      // tasks.jsonl beside an info.json without codebase_version: not LeRobot's.
      {"tasks_without_version", false,
       [](const fs::path& d) {
         Put(d / "meta/info.json", R"({"fps": 30})");
         Put(d / "meta/tasks.jsonl", R"({"task_index": 0, "task": "t"})"
                                     "\n");
       }},
      {"version_not_a_string", false,
       [](const fs::path& d) { Put(d / "meta/info.json", R"({"codebase_version": 2.1})"); }},
      {"info_not_json", false,
       [](const fs::path& d) { Put(d / "meta/info.json", "{codebase_version"); }},
      {"info_is_a_folder", false,
       [](const fs::path& d) { fs::create_directories(d / "meta/info.json"); }},
      {"no_info", false, [](const fs::path&) {}},
  };
  return folders;
}

class DatasetFolderTest : public ::testing::TestWithParam<Folder> {
 protected:
  void SetUp() override {
    dir_ = fs::path(tmp_.path()) / GetParam().name;
    // One episode in LeRobot's schema, the same in every folder: only info.json tells them apart.
    Put(dir_ / "meta/episodes.jsonl", R"({"episode_index": 0, "tasks": ["t"], "length": 1})"
                                      "\n");
    GetParam().make_info(dir_);
  }
  test::TempDir tmp_;
  fs::path dir_;
};

TEST_P(DatasetFolderTest, RuleSortsTheFolder) {
  EXPECT_EQ(IsLeRobotFolder(dir_.string()), GetParam().lerobot);
}

// A batch of 4 from a one-episode folder: refused after counting, unless the folder is LeRobot's
// (then the trainer's index names it instead, which says more than a count).
TEST_P(DatasetFolderTest, ConfigCheckAgrees) {
  const auto r =
      ParseRunConfig("run: {steps: 1}\ndata: {path: " + dir_.string() + ", batch_size: 4}\n",
                     (fs::path(tmp_.path()) / "cfg.yaml").string());
  EXPECT_EQ(r.ok(), GetParam().lerobot) << (r.ok() ? "" : r.status().message());
  if (!r.ok()) {
    EXPECT_NE(r.status().message().find("data.batch_size"), std::string::npos);
  }
}

TEST_P(DatasetFolderTest, DatasetIndexAgrees) {
  const auto r = LoadDatasetIndex(dir_.string());
  ASSERT_FALSE(r.ok());  // no folder here is a valid baton dataset
  const bool named_lerobot = r.status().message().find("a LeRobot dataset") != std::string::npos;
  EXPECT_EQ(named_lerobot, GetParam().lerobot) << r.status().message();
}

// The importer reads a LeRobot folder's metadata past the rule (v3.0 is then refused by version,
// not as "not a LeRobot dataset"); every other folder is refused before.
TEST_P(DatasetFolderTest, ImporterAgrees) {
  const auto r = LoadLeRobotDataset(dir_.string());
  const std::string why = r.ok() ? "" : r.status().message();
  const bool taken = r.ok() || why.find("not supported yet") != std::string::npos;
  EXPECT_EQ(taken, GetParam().lerobot) << why;
}

INSTANTIATE_TEST_SUITE_P(Folders, DatasetFolderTest, ::testing::ValuesIn(Folders()),
                         [](const ::testing::TestParamInfo<Folder>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace baton
