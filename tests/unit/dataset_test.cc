#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "schema/atomic_file.h"
#include "schema/safetensors.h"
#include "tests/common/temp_dir.h"
#include "trainer/data/dataset_index.h"
#include "trainer/data/episode_reader.h"
#include "trainer/data/synth_dataset.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opt_.out = tmp_ / "ds";
    opt_.episodes = 6;
    opt_.seed = 11;
    opt_.min_frames = 5;
    opt_.max_frames = 12;
    ASSERT_TRUE(WriteSynthDataset(opt_).ok());
  }
  DatasetIndex Index() {
    auto r = LoadDatasetIndex(opt_.out);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.value();
  }
  void Put(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  test::TempDir tmp_;
  SynthOptions opt_;
};

TEST(EpisodeLengthTest, LatentFramesFromVideoFrames) {
  EXPECT_EQ(EpisodeLatentFrames(1), 1);
  EXPECT_EQ(EpisodeLatentFrames(4), 1);
  EXPECT_EQ(EpisodeLatentFrames(5), 2);
  EXPECT_EQ(EpisodeLatentFrames(409), 103);
  EXPECT_EQ(EpisodeLatentFrames(412), 103);
  EXPECT_EQ(EpisodeLatentFrames(1445), 362);
}

TEST_F(DatasetTest, SynthIndexHasLengthsInRangeAndExtremes) {
  const DatasetIndex idx = Index();
  ASSERT_EQ(idx.episodes.size(), 6u);
  ASSERT_TRUE(idx.shape.has_value());
  EXPECT_EQ(idx.shape->channels, 4);
  EXPECT_EQ(idx.episodes[0].frames, 5);
  EXPECT_EQ(idx.episodes[1].frames, 12);
  for (const auto& e : idx.episodes) {
    EXPECT_GE(e.frames, 5);
    EXPECT_LE(e.frames, 12);
    EXPECT_EQ(e.frames, EpisodeLatentFrames(e.n_video));
  }
  EXPECT_EQ(idx.BucketKeys()[1], 12);
}

TEST_F(DatasetTest, IndexNeedsNoEpisodeFile) {
  fs::remove_all(fs::path(opt_.out) / "episodes");
  EXPECT_EQ(Index().episodes.size(), 6u);
}

TEST_F(DatasetTest, SynthIsDeterministicAndRefusesToOverwrite) {
  SynthOptions again = opt_;
  again.out = tmp_ / "ds2";
  ASSERT_TRUE(WriteSynthDataset(again).ok());
  EXPECT_EQ(ReadFile(opt_.out + "/episodes/ep_000003.safetensors").value(),
            ReadFile(again.out + "/episodes/ep_000003.safetensors").value());
  EXPECT_EQ(ReadFile(opt_.out + "/meta/episodes.jsonl").value(),
            ReadFile(again.out + "/meta/episodes.jsonl").value());
  const Status st = WriteSynthDataset(opt_);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--overwrite"), std::string::npos);
}

TEST_F(DatasetTest, ReadEpisodeReturnsShapesAndMaskedChannels) {
  const DatasetIndex idx = Index();
  auto ep = ReadEpisode(idx, 1);
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  const EpisodeData& e = ep.value();
  EXPECT_EQ(e.frames, 12);
  EXPECT_EQ(e.latents.size(), size_t(4 * 12 * 8 * 8));
  EXPECT_EQ(e.actions.size(), size_t(8 * 12 * 4));
  EXPECT_EQ(e.text.size(), size_t(4 * 16));
  // Two blobs use action channels 0..3; channels 4..7 are masked and zero.
  const size_t per_channel = 12 * 4;
  for (size_t c = 0; c < 8; ++c) {
    for (size_t k = 0; k < per_channel; ++k) {
      const float m = e.actions_mask[c * per_channel + k];
      EXPECT_EQ(m, c < 4 ? 1.0f : 0.0f);
      if (c >= 4) {
        EXPECT_EQ(e.actions[c * per_channel + k], 0.0f);
      }
    }
  }
}

// The structure is learnable: a blob moved by the actions explains the next frame better than
// the frame itself does (the latents are not noise).
TEST_F(DatasetTest, LatentsChangeSmoothlyFrameToFrame) {
  auto e = ReadEpisode(Index(), 1).value();
  const size_t HW = 64, F = 12;
  double diff = 0, energy = 0;
  for (size_t c = 0; c < 4; ++c) {
    for (size_t f = 0; f + 1 < F; ++f) {
      for (size_t p = 0; p < HW; ++p) {
        const double a = e.latents[(c * F + f) * HW + p], b = e.latents[(c * F + f + 1) * HW + p];
        diff += (a - b) * (a - b);
        energy += a * a;
      }
    }
  }
  EXPECT_GT(energy, 0.0);
  EXPECT_LT(diff, energy) << "consecutive frames are related";
  EXPECT_GT(diff, 0.01 * energy) << "blobs move";
}

TEST_F(DatasetTest, MissingEpisodeFileIsADataErrorNamingTheFile) {
  const DatasetIndex idx = Index();
  fs::remove(idx.EpisodePath(2));
  auto r = ReadEpisode(idx, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 65);
  EXPECT_NE(r.status().message().find(idx.EpisodePath(2)), std::string::npos)
      << r.status().message();
}

TEST_F(DatasetTest, TruncatedAndCorruptEpisodeFilesAreDataErrors) {
  const DatasetIndex idx = Index();
  const std::string path = idx.EpisodePath(3);
  const std::string raw = ReadFile(path).value();
  Put(path, raw.substr(0, raw.size() / 2));
  auto r = ReadEpisode(idx, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kData);
  EXPECT_NE(r.status().message().find(path), std::string::npos);

  std::string flipped = raw;
  flipped[10] = '\x01';  // inside the JSON header
  Put(path, flipped);
  r = ReadEpisode(idx, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kData);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

TEST_F(DatasetTest, NonRegularEpisodeFileIsADataErrorAndNeverBlocks) {
  const DatasetIndex idx = Index();
  const std::string path = idx.EpisodePath(4);
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return ReadEpisode(idx, 4); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream unblock(path);  // lets the blocked reader finish before failing
    FAIL() << "ReadEpisode blocked on a FIFO";
  }
  auto r = pending.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 65);
  EXPECT_NE(r.status().message().find(path + ": not a valid safetensors file: it is a FIFO"),
            std::string::npos)
      << r.status().message();

  fs::remove(path);
  fs::create_directories(path);
  r = ReadEpisode(idx, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 65);
  EXPECT_NE(r.status().message().find(path + ": not a valid safetensors file: it is a folder"),
            std::string::npos)
      << r.status().message();
}

TEST_F(DatasetTest, EpisodeWhoseFramesDisagreeWithTheIndex) {
  DatasetIndex idx = Index();
  idx.episodes[0].n_video += 40;  // 10 more latent frames than the file holds
  idx.episodes[0].frames = EpisodeLatentFrames(idx.episodes[0].n_video);
  auto r = ReadEpisode(idx, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("latents hold 5 frames"), std::string::npos)
      << r.status().message();
}

TEST_F(DatasetTest, MalformedIndexLinesNameFileAndLine) {
  const std::string meta = opt_.out + "/meta/episodes.jsonl";
  std::string text = ReadFile(meta).value();
  Put(meta, text + "{\"id\": \"x\", \"n_video\": \"ten\", \"file\": \"x\"}\n");
  auto r = LoadDatasetIndex(opt_.out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 65);
  EXPECT_NE(r.status().message().find(meta + ":7: episode 'x': missing or non-integer 'n_video'"),
            std::string::npos)
      << r.status().message();
  Put(meta, text + "not json\n");
  EXPECT_NE(LoadDatasetIndex(opt_.out).status().message().find(meta + ":7: not valid JSON"),
            std::string::npos);
  Put(meta, text + text.substr(0, text.find('\n') + 1));
  EXPECT_NE(LoadDatasetIndex(opt_.out).status().message().find("'ep_000000' repeats"),
            std::string::npos);
  Put(meta, "");
  EXPECT_NE(LoadDatasetIndex(opt_.out).status().message().find("is empty"), std::string::npos);
  fs::remove(meta);
  EXPECT_EQ(LoadDatasetIndex(opt_.out).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

// Version 2: the text lives in a shared file named by the index line; the reader hands it out as
// the episode's own text, and a version-1 folder still reads.
TEST_F(DatasetTest, Version2SharedTextReadsAsTheEpisodesText) {
  const DatasetIndex v1 = Index();
  auto first = ReadEpisode(v1, 0);
  ASSERT_TRUE(first.ok());
  // Move every episode's text into one shared file (episode 0's), rewrite the index as version 2.
  const std::string root = opt_.out;
  fs::create_directories(root + "/texts");
  const std::vector<int64_t> tshape{opt_.shape.text_len, opt_.shape.text_dim};
  ASSERT_TRUE(WriteSafetensors(root + "/texts/t0.safetensors",
                               {{"text", StDType::kF32, tshape, first->text.data()}})
                  .ok());
  std::string index_text;
  for (int64_t i = 0; i < int64_t(v1.episodes.size()); ++i) {
    auto ep = ReadEpisode(v1, i);
    ASSERT_TRUE(ep.ok());
    EpisodeMeta m = v1.episodes[size_t(i)];
    m.text = "texts/t0.safetensors";
    const std::vector<int64_t> lshape{ep->shape.channels, ep->frames, ep->shape.height,
                                      ep->shape.width};
    const std::vector<int64_t> ashape{ep->shape.action_dim, ep->frames, ep->shape.action_steps};
    ASSERT_TRUE(WriteSafetensors(root + "/" + m.file,
                                 {{"latents", StDType::kF32, lshape, ep->latents.data()},
                                  {"actions", StDType::kF32, ashape, ep->actions.data()},
                                  {"actions_mask", StDType::kF32, ashape, ep->actions_mask.data()}})
                    .ok());
    index_text += EpisodeMetaJson(m) + "\n";
  }
  Put(root + "/meta/episodes.jsonl", index_text);
  // A text reference in a version-1 folder is refused: the reader cannot know the layout.
  auto refused = LoadDatasetIndex(root);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("version 2"), std::string::npos);
  Put(root + "/meta/info.json", DatasetShapeJson(opt_.shape, 2));
  const DatasetIndex v2 = Index();
  EXPECT_EQ(v2.version, 2);
  EXPECT_NE(v2.fingerprint, v1.fingerprint);
  for (int64_t i = 0; i < int64_t(v2.episodes.size()); ++i) {
    auto ep = ReadEpisode(v2, i);
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    EXPECT_EQ(ep->text, first->text);
  }
  // A missing shared text file names it.
  fs::remove(root + "/texts/t0.safetensors");
  auto missing = ReadEpisode(v2, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kData);
  EXPECT_NE(missing.status().message().find("t0.safetensors"), std::string::npos);
  // A newer format version is refused rather than misread.
  Put(root + "/meta/info.json", DatasetShapeJson(opt_.shape, 3));
  auto newer = LoadDatasetIndex(root);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("newer than this baton reads"), std::string::npos);
}

TEST(LeRobotFolderTest, IsNamedAndSentToTheImporter) {
  auto r = LoadDatasetIndex(std::string(BATON_SOURCE_DIR) + "/tests/data/lerobot_g1_v21");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kData);
  EXPECT_NE(r.status().message().find(
                "a LeRobot dataset (codebase_version v2.1): import it first with baton-train "
                "import-lerobot"),
            std::string::npos);
}

}  // namespace
}  // namespace baton
