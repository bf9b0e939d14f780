#include "trainer/data/pad_collate.h"

#include <gtest/gtest.h>

#include "tests/common/temp_dir.h"
#include "trainer/data/synth_dataset.h"
#include "trainer/fail.h"

namespace baton {
namespace {

class PadCollateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.out = tmp_ / "ds";
    o.episodes = 4;
    o.seed = 3;
    o.min_frames = 9;
    o.max_frames = 21;
    ASSERT_TRUE(WriteSynthDataset(o).ok());
    index_ = LoadDatasetIndex(o.out).value();
    for (int64_t i = 0; i < 4; ++i) episodes_.push_back(ReadEpisode(index_, i).value());
  }
  test::TempDir tmp_;
  DatasetIndex index_;
  std::vector<EpisodeData> episodes_;
};

TEST_F(PadCollateTest, PadsToMultipleAndMasksPadRows) {
  const PaddedBatch b = PadCollate(episodes_, 8);
  EXPECT_EQ(b.padded_frames, 24);  // round_up(21, 8)
  EXPECT_EQ(b.latents.sizes(), (std::vector<int64_t>{4, 4, 24, 8, 8}));
  EXPECT_EQ(b.actions.sizes(), (std::vector<int64_t>{4, 8, 24, 4}));
  EXPECT_EQ(b.text.sizes(), (std::vector<int64_t>{4, 4, 16}));
  EXPECT_EQ(b.episodes, (std::vector<int64_t>{0, 1, 2, 3}));
  using torch::indexing::Slice;
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t F = episodes_[i].frames;
    EXPECT_EQ(b.valid_frames[i].item<int64_t>(), F);
    // Real frames are the episode's data, bit for bit.
    auto orig = torch::from_blob(episodes_[i].latents.data(), {4, F, 8, 8}, torch::kFloat32);
    EXPECT_TRUE(torch::equal(b.latents[i].index({Slice(), Slice(0, F)}), orig));
    auto mask = torch::from_blob(episodes_[i].actions_mask.data(), {8, F, 4}, torch::kFloat32);
    EXPECT_TRUE(torch::equal(b.actions_mask[i].index({Slice(), Slice(0, F)}), mask));
    // Pad frames are zeros everywhere, including the action mask.
    EXPECT_EQ(
        b.latents[i].index({Slice(), Slice(F, torch::indexing::None)}).abs().sum().item<float>(),
        0.0f);
    EXPECT_EQ(
        b.actions[i].index({Slice(), Slice(F, torch::indexing::None)}).abs().sum().item<float>(),
        0.0f);
    EXPECT_EQ(
        b.actions_mask[i].index({Slice(), Slice(F, torch::indexing::None)}).sum().item<float>(),
        0.0f);
  }
}

TEST_F(PadCollateTest, PadMultipleOneKeepsMaxLength) {
  EXPECT_EQ(PadCollate(episodes_, 1).padded_frames, 21);
  EXPECT_EQ(PadCollate({episodes_[0]}, 4).padded_frames, 12);  // F = 9
}

TEST_F(PadCollateTest, MixedShapesFailFastAsDataError) {
  auto odd = episodes_;
  odd[1].shape.channels = 5;
  try {
    PadCollate(odd, 8);
    FAIL();
  } catch (const FatalError& e) {
    EXPECT_EQ(e.exit_code(), 65);
    EXPECT_NE(std::string(e.what()).find("pad_collate.cc:"), std::string::npos) << "file:line";
  }
}

}  // namespace
}  // namespace baton
