// HeartbeatRecord: what one trainer rank says about its progress, read by the launcher's hang
// watch (docs/orchestrator.md, "Hangs").
//
// Each rank owns one file, RUN_DIR/heartbeat/rank-<NNNNN> (RunFolder::HeartbeatFile), and
// rewrites it in place at every phase change, and during loads and saves as bytes move: one
// pwrite of kHeartbeatRecordBytes at offset 0, no fsync (a heartbeat is about now; after a crash
// it has no value). The record is one line of text padded with spaces, so `cat` shows it; it ends
// with " end" before the padding, which is how a reader tells a whole record from a torn one (it
// then keeps the previous). Every field must be there once and in range (ParseHeartbeat): a file
// anyone can write must not make a rank look alive for ever or name a process it is not. The
// trainer writes (trainer/train/heartbeat.h), the launcher reads; both use these two functions.
// Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/vocabularies.h"

namespace baton {

inline constexpr size_t kHeartbeatRecordBytes = 256;

// What a rank is doing. Loads and saves carry their own budget (budget_s): a slow save of a big
// checkpoint is not a hang.
enum class HeartbeatPhase { kInit, kLoad, kMicroStep, kUpdate, kSave };
template <>
struct Vocabulary<HeartbeatPhase> {
  static constexpr Word<HeartbeatPhase> kWords[] = {{HeartbeatPhase::kInit, "init"},
                                                    {HeartbeatPhase::kLoad, "load"},
                                                    {HeartbeatPhase::kMicroStep, "micro-step"},
                                                    {HeartbeatPhase::kUpdate, "update"},
                                                    {HeartbeatPhase::kSave, "save"}};
};

// The ranges ParseHeartbeat accepts (a PID is a positive pid_t).
inline constexpr int64_t kHeartbeatMaxPid = 2147483647;          // 2^31 - 1
inline constexpr int64_t kHeartbeatMaxRank = 1 << 20;            // ranks 0 .. 2^20 - 1
inline constexpr int64_t kHeartbeatMaxCount = int64_t(1) << 53;  // step, micro, bytes done
inline constexpr double kHeartbeatMaxSeconds = 1e7;              // budget_s, step_s: ~116 days

struct HeartbeatRecord {
  int64_t rank = 0;
  int64_t pid = 0;
  std::string host;  // gethostname(): the machine the process runs on
  std::string node;  // SLURMD_NODENAME (srun -w target), or host outside SLURM
  HeartbeatPhase phase = HeartbeatPhase::kInit;
  int64_t step = 0;     // 0-based index of the optimizer step in progress
  int64_t micro = 0;    // micro-step within it
  double wall = 0;      // Unix seconds when written (informative: nodes' clocks differ)
  double budget_s = 0;  // load/save: how long this phase may go without progress (0 = the step's)
  double step_s = 0;    // the last finished step's seconds (0 before the first)
  int64_t done = 0;     // load/save: bytes moved so far in this phase (0 otherwise)
};

// Exactly kHeartbeatRecordBytes, ending with '\n'. Host and node names are cut to 40 bytes and
// any byte outside [A-Za-z0-9._-] becomes '_'.
std::string FormatHeartbeat(const HeartbeatRecord& r);
// nullopt for anything that is not one whole, valid record: torn, empty, another format, a
// field missing, repeated or not a decimal number, or out of range (rank outside
// [0, kHeartbeatMaxRank), pid outside [1, kHeartbeatMaxPid], step, micro or done negative or above
// kHeartbeatMaxCount, wall not finite and positive, budget_s or step_s not finite or outside
// [0, kHeartbeatMaxSeconds]). `done` may be absent (records of earlier trainers): 0.
std::optional<HeartbeatRecord> ParseHeartbeat(std::string_view text);

}  // namespace baton
