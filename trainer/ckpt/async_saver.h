// AsyncSaver: one periodic checkpoint written on a background thread while training goes on.
//
// The training thread prepares the save (save_phases.h: finite check and .partial folder, agreed
// across ranks), copies the state into host buffers (Start: the only stall, besides the commit),
// and hands the snapshot to one background thread, which writes this rank's files with the same
// writer and hashes as a synchronous save. The background thread runs no collective: Gloo and
// NCCL are not safe with two threads issuing collectives on one group. The commit (every rank's
// sizes and hashes in one agreed collective, then rank 0's manifest and rename) runs on the
// training thread at a step boundary once every rank's write is done (AllWritten, which on
// W > 1 ranks agrees on "all written?" with one one-byte all-reduce per step while a save is in
// flight), or when the next save has to wait for it (Commit).
//
// At most one save is in flight; no other save starts before it is committed or abandoned, so two
// saves never write the same folder, and a save's removal of stale .partial folders never meets a
// live one. Abandon (a stop signal whose grace budget the rest of the write would not leave room
// for) sets a cancel flag the writer checks after every 4 MiB write, joins it and removes the
// .partial. A write that fails (disk full, folder not writable) fails the run at the commit, on
// every rank alike, with the writer's error naming the file; its .partial is never a checkpoint.
//
// From the environment, as written (the trainer reads it once, trainer_environment.h):
// BATON_GRACE_S, the seconds a stop signal leaves before the job is killed (decimal seconds,
// schema/grace_seconds.h; unset: finishing always fits); BATON_TEST_CKPT_WRITE_DELAY_MS, tests
// only: the writer sleeps this long after every 4 MiB and every file's last write, so a test can
// land a kill inside a background save.
//
// Used by the training thread only (the writer thread is private); not copyable.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "trainer/ckpt/save_phases.h"

namespace baton {

class AsyncSaver {
 public:
  // `grace_s`, `write_delay_ms`: the two variables' texts ("" when unset); a malformed one fails
  // fast (exit 78) naming it.
  AsyncSaver(const std::string& grace_s, const std::string& write_delay_ms);
  ~AsyncSaver();  // a write still running is cancelled and joined; its .partial never counts
  AsyncSaver(const AsyncSaver&) = delete;
  AsyncSaver& operator=(const AsyncSaver&) = delete;

  bool in_flight() const { return in_flight_; }
  int64_t step() const { return save_.step; }
  int64_t bytes() const { return save_.bytes; }  // this rank's part of the save in flight
  double grace_s() const { return grace_s_; }

  // Why async saves of `p` are off on this host ("" when the snapshot fits; snapshot_fit.h),
  // decided at the first save and kept (the buffers are reused).
  const std::string& Refusal(const PreparedSave& p, int64_t mem_limit_bytes);
  // True the first time it is asked after a refusal: the trainer says why once per segment.
  bool FirstRefusal() { return !std::exchange(refusal_told_, true); }

  // Snapshots `p` into the host buffers and starts its write. Requires !in_flight().
  void Start(PreparedSave p);
  double snapshot_seconds() const { return snapshot_s_; }

  // This rank's write has finished (written or failed).
  bool Written() const { return done_.load(); }
  // Whether every rank's write is done (one one-byte all-reduce on W > 1: every rank asks at the
  // same step boundaries while a save is in flight). Counts the boundaries the write overlapped.
  bool AllWritten();
  // Waits for this rank's write, then commits (collective on W > 1). Rethrows the write's failure.
  SaveResult Commit();
  double waited_seconds() const { return waited_s_; }       // in the last Commit
  double commit_seconds() const { return commit_s_; }       // the last commit's own time
  double write_seconds() const { return write_s_; }         // the last finished write
  int64_t steps_overlapped() const { return overlapped_; }  // boundaries polled during it

  // On a stop: whether writing the rest of this save and then `next_bytes` (the stop save; 0
  // when none follows) fits the grace budget, from the bytes left and the rate measured (every
  // rank agrees: any rank's "no" abandons). True when there is no budget; false when nothing is
  // written yet (no rate). `why` gets the figures, in hundredths of a second rounded up: the
  // very figures compared with the budget.
  bool FinishFits(int64_t next_bytes, std::string* why);
  // Cancels the write, joins it, and removes the .partial (rank 0, after every rank stopped).
  void Abandon();

 private:
  void Join();
  SnapshotBuffers buffers_;
  PreparedSave save_;
  bool in_flight_ = false;
  std::optional<std::string> refusal_;
  bool refusal_told_ = false;
  std::thread thread_;
  std::atomic<bool> cancel_{false}, done_{false};
  std::atomic<int64_t> written_{0};
  std::string payload_;
  std::exception_ptr error_;
  std::chrono::steady_clock::time_point write_t0_;
  std::atomic<double> write_elapsed_{0};
  double rate_ = 0;  // bytes/s of the last finished write
  double grace_s_ = -1;
  int64_t delay_ms_ = 0;
  double snapshot_s_ = 0, waited_s_ = 0, commit_s_ = 0, write_s_ = 0;
  int64_t overlapped_ = 0;
};

}  // namespace baton
