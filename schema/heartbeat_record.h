// HeartbeatRecord: what one trainer rank says about its progress, read by the launcher's hang
// watch (docs/orchestrator.md, "Hangs").
//
// Each rank owns one file, RUN_DIR/heartbeat/rank-<NNNNN> (RunFolder::HeartbeatFile), and
// rewrites it in place at every phase change: one pwrite of kHeartbeatRecordBytes at offset 0,
// no fsync (a heartbeat is about now; after a crash it has no value). The record is one line of
// text padded with spaces, so `cat` shows it; it ends with " end" before the padding, which is how
// a reader tells a whole record from a torn one (it then keeps the previous). The trainer writes
// (trainer/train/heartbeat.h), the launcher reads; both use these two functions. Plain values;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

inline constexpr size_t kHeartbeatRecordBytes = 256;

// What a rank is doing. Loads and saves carry their own budget (budget_s): a slow save of a big
// checkpoint is not a hang.
enum class HeartbeatPhase { kInit, kLoad, kMicroStep, kUpdate, kSave };
const char* HeartbeatPhaseName(HeartbeatPhase p);  // init | load | micro-step | update | save
std::optional<HeartbeatPhase> ParseHeartbeatPhase(std::string_view name);

struct HeartbeatRecord {
  int64_t rank = 0;
  int64_t pid = 0;
  std::string host;  // gethostname(): the machine the process runs on
  std::string node;  // SLURMD_NODENAME (srun -w target), or host outside SLURM
  HeartbeatPhase phase = HeartbeatPhase::kInit;
  int64_t step = 0;     // 0-based index of the optimizer step in progress
  int64_t micro = 0;    // micro-step within it
  double wall = 0;      // Unix seconds when written
  double budget_s = 0;  // load/save: how long this phase may take (0 = the step budget)
  double step_s = 0;    // the last finished step's seconds (0 before the first)
};

// Exactly kHeartbeatRecordBytes, ending with '\n'. Host and node names are cut to 40 bytes and
// any byte outside [A-Za-z0-9._-] becomes '_'.
std::string FormatHeartbeat(const HeartbeatRecord& r);
// nullopt for anything that is not one whole record (torn, empty, another format).
std::optional<HeartbeatRecord> ParseHeartbeat(std::string_view text);

}  // namespace baton
