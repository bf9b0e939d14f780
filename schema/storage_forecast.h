// The storage a run will hold, forecast before it enters the queue (docs/eval.md, "Storage
// forecast"), and the retention rule both binaries apply to checkpoints.
//
// RetentionKeeps is the one statement of checkpoint.keep_last / keep_every / keep_best: the
// trainer's retention after a save, its pruning before a save that does not fit (trainer/ckpt/
// save_space.h) walk it, and RetainedCount counts what it keeps at the end of a run. What it
// knows of evals comes in RetainedCheckpoint, filled from the run's result files
// (schema/keep_best.h). The forecast
// is the checkpoints retention keeps at the end of the run (saves every checkpoint.every steps and
// at run.steps) times the bytes of one checkpoint folder (the trainer's plan,
// MemoryPlanReport::checkpoint.disk_bytes), plus an allowance for the events and the job log.
// Retention never lets the kept set shrink, so the end of the run is also its largest footprint
// once the trainer prunes before a save. Pure functions except FreeBytes; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

struct RetainedCheckpoint {
  int64_t step = 0;
  bool finite = true;  // its manifest says the state was checked finite
  // keep_best only: the checkpoint's value of the metric (NaN: no result, or none usable), and
  // whether it waits for one (an eval target without a result: not evaluated yet, or being
  // evaluated).
  double value = std::numeric_limits<double>::quiet_NaN();
  bool awaiting_eval = false;
};

// checkpoint.keep_last / keep_every / keep_best as retention applies them.
struct RetentionRule {
  int64_t keep_last = 1, keep_every = 0;
  int64_t best_k = 0;  // 0: no keep-best
};

// For valid checkpoints listed newest step first: whether retention keeps each. Kept: the
// newest `keep_last`, every step that is a multiple of `keep_every` (> 0), the newest finite
// one even when newer ones are not, and with keep-best (best_k > 0) the best_k with the lowest
// value (ties: the lower step) and every one awaiting its eval.
std::vector<bool> RetentionKeeps(const std::vector<RetainedCheckpoint>& newest_first,
                                 const RetentionRule& rule);
inline std::vector<bool> RetentionKeeps(const std::vector<RetainedCheckpoint>& newest_first,
                                        int64_t keep_last, int64_t keep_every) {
  return RetentionKeeps(newest_first, RetentionRule{keep_last, keep_every, 0});
}

// Whether value/step a ranks before b for keep-best: lower value, then lower step. NaN never
// ranks.
bool RanksBefore(double a_value, int64_t a_step, double b_value, int64_t b_step);

// How many checkpoints retention keeps at the end of a run of `steps` optimizer steps that saves
// every `every` steps and at `steps`: the newest keep_last saves and the keep_every multiples
// among them, counted without listing them (a run may have billions of steps), plus with
// keep-best up to `best_k` more (the best may lie outside the others; never more than the saves).
int64_t RetainedCount(int64_t steps, int64_t every, int64_t keep_last, int64_t keep_every,
                      int64_t best_k = 0);

// What the events and the job's log take, per unit: one step record, one progress line per
// train.log_every steps, one save's lines and records, and each attempt's fixed part (segment
// records, the launcher's and trainer's start-up lines, heartbeats). Allowances above what a
// run writes, rounded to whole records.
inline constexpr int64_t kStepEventBytes = 720;
inline constexpr int64_t kProgressLineBytes = 180;
inline constexpr int64_t kSaveRecordBytes = 1024;
inline constexpr int64_t kAttemptFixedBytes = 32 * 1024;

struct StorageInputs {
  int64_t checkpoint_bytes = 0;  // one checkpoint folder on disk
  int64_t steps = 0, every = 1, keep_last = 1, keep_every = 0, log_every = 1;
  int64_t keep_best_k = 0;  // 0: no keep-best
};

struct StorageForecast {
  int64_t checkpoint_bytes = 0;  // one checkpoint folder
  int64_t retained = 0;          // checkpoints kept at the end of the run
  int64_t checkpoints_bytes = 0, events_bytes = 0, logs_bytes = 0;
  int64_t footprint_bytes = 0;  // all of the above
  int64_t free_bytes = 0;       // the run folder's filesystem, for this user
  std::string folder;           // where free_bytes was measured
  // The user's quota there, when a quota tool answered: what is left of it, and which tool.
  std::optional<int64_t> quota_free_bytes;
  std::string quota_source;
  bool fits = true;  // footprint_bytes within free_bytes and the quota left

  // {"footprint_bytes", "free_bytes", "fits", then the parts}.
  nlohmann::ordered_json ToJson() const;
  // One line for stdout: "storage: 1.2 GB forecast (4 checkpoints of ...) against ... free".
  std::string Line() const;
};

// The footprint; free_bytes, folder, the quota and fits are left for the caller (Judge).
StorageForecast ForecastStorage(const StorageInputs& in);

// Sets fits from footprint, free space and quota.
void Judge(StorageForecast* f);

// Space this user may still write on the filesystem of `path` (statvfs: f_bavail x f_frsize);
// kIo naming the path when it cannot be asked.
Result<int64_t> FreeBytes(const std::string& path);

// "1.23 GB" (decimal units, 3 significant digits; bytes below 1 kB).
std::string ByteText(int64_t bytes);

}  // namespace baton
