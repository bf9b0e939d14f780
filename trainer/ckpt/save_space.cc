#include "trainer/ckpt/save_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/keep_best.h"
#include "schema/storage_forecast.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

struct Room {
  int64_t free = 0, block = 4096;
};

Room AskRoom(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) {
    BATON_FAIL(kExitIo, dir + ": cannot ask its filesystem for free space: " + std::strerror(errno),
               "check that the run folder is still mounted");
  }
  Room r;
  r.block = st.f_frsize != 0 ? int64_t(st.f_frsize) : int64_t(st.f_bsize);
  int64_t free = 0;
  r.free = __builtin_mul_overflow(int64_t(st.f_bavail), r.block, &free) ? INT64_MAX : free;
  return r;
}

// Valid checkpoints that retention drops once `step` is committed, oldest first; never the
// newest valid one nor the newest finite one.
std::vector<std::string> PrunableBeforeSave(const std::string& dir, int64_t step,
                                            const RunConfig& config) {
  std::vector<CheckpointEntry> valid;
  for (CheckpointEntry& c : ListCheckpoints(dir, /*check_hashes=*/false)) {
    // A re-save of the same step replaces that folder itself; invalid ones are kept for
    // inspection and never count.
    if (c.valid && c.step != step) valid.push_back(std::move(c));
  }
  CheckpointEntry saving;
  saving.step = step;
  saving.valid = saving.finite = true;
  std::vector<CheckpointEntry> after{saving};
  after.insert(after.end(), valid.begin(), valid.end());
  const std::vector<bool> keep =
      RetentionKeeps(RetainedOnDisk(config, dir, after), RetentionRuleOf(config.checkpoint));
  std::vector<std::string> out;
  bool seen_finite = false;
  for (size_t i = 0; i < valid.size(); ++i) {
    const bool newest_valid = i == 0;
    const bool newest_finite = valid[i].finite && !seen_finite;
    seen_finite = seen_finite || valid[i].finite;
    if (!keep[i + 1] && !newest_valid && !newest_finite) out.push_back(valid[i].path);
  }
  return {out.rbegin(), out.rend()};
}

}  // namespace

SaveSpace EnsureSaveSpace(const std::string& checkpoints_dir, int64_t step, int64_t bytes,
                          int64_t files, const RunConfig& config) {
  Room room = AskRoom(checkpoints_dir);
  SaveSpace out;
  // Each file's last block is partly empty; the reserve is for what is written before the next
  // save (events, the job log).
  int64_t rounding = 0;
  if (__builtin_mul_overflow(files, room.block, &rounding) ||
      __builtin_add_overflow(bytes, rounding, &out.needed) ||
      __builtin_add_overflow(out.needed, kSaveReserveBytes, &out.needed)) {
    out.needed = INT64_MAX;
  }
  out.free = room.free;
  if (out.free >= out.needed) return out;
  for (const std::string& path : PrunableBeforeSave(checkpoints_dir, step, config)) {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) continue;
    out.pruned.push_back(path);
    out.free = AskRoom(checkpoints_dir).free;
    if (out.free >= out.needed) return out;
  }
  const std::string name = kCheckpointPrefix + std::to_string(step);
  BATON_FAIL(kExitIo,
             name + " needs " + std::to_string(out.needed) + " bytes (one checkpoint of " +
                 std::to_string(bytes) + " bytes in " + std::to_string(files) +
                 " files, their blocks and a reserve of " + std::to_string(kSaveReserveBytes) +
                 " for events and logs), but " + std::to_string(out.free) + " bytes are free in " +
                 checkpoints_dir +
                 (out.pruned.empty() ? std::string(" and retention keeps every checkpoint there")
                                     : " after deleting " + std::to_string(out.pruned.size()) +
                                           " checkpoint(s) retention drops after this save") +
                 "; the save was not started",
             "free space, lower checkpoint.keep_last / keep_every / keep_best.k, or put run.dir on "
             "a larger filesystem; the checkpoints kept are intact and --resume auto continues "
             "from the newest");
}

}  // namespace baton
