// CheckpointDiskBytes against files the safetensors writer really writes: a one-rank checkpoint's
// optimizer file and transformer/ export, written here from the model's parameter list, take
// the bytes the plan says (the small files are the plan's allowances and its manifest).
#include "trainer/memory/checkpoint_disk_bytes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "tests/common/temp_dir.h"
#include "trainer/memory/checkpoint_bytes.h"

namespace baton {
namespace {

PlanModel Tiny() {
  PlanModel m;
  m.channels = 2, m.patch = 2, m.action_dim = 4, m.text_dim = 8;
  m.dim = 24, m.heads = 2, m.layers = 2, m.ffn_dim = 48, m.freq_dim = 16;
  return m;
}

int64_t Written(const std::string& path, const std::vector<StTensorRef>& tensors,
                const std::map<std::string, std::string>& metadata = {}) {
  EXPECT_TRUE(WriteSafetensors(path, tensors, metadata).ok()) << path;
  return int64_t(std::filesystem::file_size(path));
}

TEST(CheckpointDiskBytes, TensorFilesAsTheWriterWritesThem) {
  const std::vector<PlanParameter> params = ModelParameters(Tiny());
  test::TempDir dir;
  std::vector<std::vector<char>> data;  // zero bytes behind every tensor
  std::vector<StTensorRef> moments, exported;
  for (const PlanParameter& p : params) {
    data.emplace_back(size_t(p.numel) * 4);
    const void* bytes = data.back().data();
    exported.push_back({p.name, StDType::kF32, p.shape, bytes});
    if (!p.trainable) continue;
    moments.push_back({"exp_avg." + p.name, StDType::kF32, p.shape, bytes});
    moments.push_back({"exp_avg_sq." + p.name, StDType::kF32, p.shape, bytes});
    data.emplace_back(8);
    moments.push_back({"step." + p.name, StDType::kI64, {1}, data.back().data()});
  }
  const int64_t tensors = Written(dir / "optimizer.safetensors", moments) +
                          Written(dir / "export.safetensors", exported, {{"format", "pt"}});
  const CheckpointDisk disk =
      CheckpointDiskBytes(params, 1, StDType::kF32, StDType::kF32, int64_t(1) << 40);
  ASSERT_FALSE(disk.overflow);
  // optimizer, export, config.json, trainer_state.json, manifest.
  EXPECT_EQ(disk.files, 5);
  const int64_t small = disk.bytes - tensors;
  EXPECT_GE(small, kModelConfigAllowance + kTrainerStateAllowance);
  EXPECT_LT(small, kModelConfigAllowance + kTrainerStateAllowance + 2000);  // + the manifest
  // The tensor data alone is what the grace check counts.
  const CheckpointBytes data_only = PlanCheckpointBytes(params, 1, 4, 4);
  EXPECT_GT(disk.bytes, data_only.total);
}

TEST(CheckpointDiskBytes, MoreRanksAddTheirHeadersAndIndexes) {
  const std::vector<PlanParameter> params = ModelParameters(Tiny());
  const CheckpointDisk one =
      CheckpointDiskBytes(params, 1, StDType::kF32, StDType::kBF16, int64_t(1) << 40);
  const CheckpointDisk three =
      CheckpointDiskBytes(params, 3, StDType::kF32, StDType::kBF16, int64_t(1) << 40);
  // One rank: optimizer, master weights, export, 2 small, manifest. Three: 3 of each tensor
  // file, 3 indexes, 2 small, manifest.
  EXPECT_EQ(one.files, 6);
  EXPECT_EQ(three.files, 15);
  EXPECT_GT(three.bytes, one.bytes);
  // The tensor bytes are the same; the difference is headers and indexes, a few kB here.
  EXPECT_LT(three.bytes - one.bytes, 64 * 1024);
}

}  // namespace
}  // namespace baton
