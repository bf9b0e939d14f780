// Store: baton's run history in SQLite — the only code in baton that speaks SQL.
//
// Opens $BATON_HOME/baton.db (default ~/.baton/baton.db), applies the numbered migrations of
// schema/sql/ (embedded at build time) up to PRAGMA user_version, and offers typed reads and
// writes over runs, attempts, steps, micro-steps, checkpoints and ingest cursors (docs/store.md).
//
// Writes that must land together run inside one Write() transaction (BEGIN IMMEDIATE; rolled
// back unless committed). Methods named *InTx expect the caller to hold that transaction; the
// others open their own. One Store is one SQLite connection: not thread-safe; open one per
// thread (WAL lets readers and the single writer proceed concurrently across processes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/store/db.h"
#include "orchestrator/store/records.h"
#include "orchestrator/store/series_rollups.h"
#include "schema/status.h"

namespace baton {

struct EmbeddedFile;

// $BATON_HOME, or ~/.baton when unset.
std::string BatonHome();
// BatonHome() + "/baton.db".
std::string DefaultDbPath();

// Milliseconds a writer waits for another writer's lock before giving up (Code::kUnavailable).
inline constexpr int kBusyTimeoutMs = 10000;

struct NewRun {
  std::string name;
  std::string config;
  std::string config_source;
  std::string run_dir;
  int64_t target_steps = 0;
  int64_t max_restarts = 0;
  int64_t max_failures = 0;
  std::string partition;  // slurm.partition ('' = the cluster's default)
  std::string owner;      // the submitting Unix user
  std::string cluster;    // SLURM's ClusterName or slurm.cluster ('' = unknown)
};

// Which runs a list keeps: '' lets every value through.
struct RunFilter {
  std::string owner;    // runs.owner (the submitting Unix user)
  std::string cluster;  // runs.cluster
};

// A window over one run's step rows, in step order (then attempt order).
struct StepQuery {
  int64_t from_step = 0;            // inclusive
  int64_t to_step = INT64_MAX;      // inclusive
  bool include_superseded = false;  // false = the effective series
  int64_t limit = 100000;
  int64_t offset = 0;
};

// Steps the trainer skipped because their loss or gradient norm was NaN/Inf.
struct NonfiniteCounts {
  int64_t effective = 0;   // in the effective series (superseded = 0)
  int64_t superseded = 0;  // re-done by a later attempt
};

class Store {
 public:
  // Opens (creating folders and the file) and migrates. Code::kIo when the folder or file cannot
  // be created, kData when the file is not a baton database or is newer than this binary.
  [[nodiscard]] static Result<std::unique_ptr<Store>> Open(const std::string& path);

  // Schema version after migrations (PRAGMA user_version).
  [[nodiscard]] Result<int64_t> SchemaVersion();
  // Highest migration compiled into this binary.
  static int64_t LatestSchemaVersion();

  // Runs `body` inside BEGIN IMMEDIATE; commits when it returns Ok, rolls back otherwise.
  [[nodiscard]] Status Write(const std::function<Status()>& body);
  [[nodiscard]] Result<Transaction> Begin() { return Transaction::Begin(*db_); }
  // The same for writes that touch only run `run_id`'s rows (its steps, attempts, cursors, time
  // buckets, rollups, its own runs row): on PostgreSQL such writers of different runs go on side
  // by side (db.h BeginRunWrite), each still excluded by every Write()/Begin() writer.
  [[nodiscard]] Status WriteForRun(int64_t run_id, const std::function<Status()>& body);
  [[nodiscard]] Result<Transaction> BeginForRun(int64_t run_id) {
    return Transaction::BeginForRun(*db_, run_id);
  }

  // ---- runs
  [[nodiscard]] Result<int64_t> CreateRunInTx(const NewRun& run, double now);
  // The run folder and frozen config, once the id (part of the folder name) is known.
  [[nodiscard]] Status SetRunDirInTx(int64_t run_id, const std::string& run_dir,
                                     const std::string& config);
  [[nodiscard]] Status SetRunJobInTx(int64_t run_id, const std::string& job_id, double now);
  // The SLURM cluster a resumed run's new job is on (baton resume; attempts ingested from now on
  // take it).
  [[nodiscard]] Status SetRunClusterInTx(int64_t run_id, const std::string& cluster);
  // The slurm.max_restarts / max_failures a resumed run continues under (baton resume).
  [[nodiscard]] Status SetRunLimitsInTx(int64_t run_id, int64_t max_restarts, int64_t max_failures);
  // Sets status and reason unconditionally (baton cancel, reconcile decisions).
  [[nodiscard]] Status SetRunStatusInTx(int64_t run_id, RunStatus status, const std::string& reason,
                                        double now);
  // Same, but leaves a terminal run (COMPLETED/FAILED/CANCELLED) as it is.
  [[nodiscard]] Status SetActiveRunStatusInTx(int64_t run_id, RunStatus status,
                                              const std::string& reason, double now);
  [[nodiscard]] Result<RunRecord> GetRun(int64_t run_id);
  // A run by id ("12") or by name (the newest run with that name). Code::kNotFound otherwise.
  [[nodiscard]] Result<RunRecord> FindRun(const std::string& id_or_name);
  // Newest first; only the runs `filter` lets through (all by default).
  [[nodiscard]] Result<std::vector<RunRecord>> ListRuns(int64_t limit = 1000, int64_t offset = 0,
                                                        const RunFilter& filter = {});
  // Runs whose status is not terminal (what watch ingests and reconciles).
  [[nodiscard]] Result<std::vector<RunRecord>> ListActiveRuns();
  // Terminal runs whose status last changed at or after `since` (what watch and serve follow up
  // for SLURM's final state, reconciler.h).
  [[nodiscard]] Result<std::vector<RunRecord>> ListRunsEndedSince(double since);

  // ---- attempts
  // The attempt id for (run, cluster, job, restart, in-job seq), inserting an empty row when new.
  [[nodiscard]] Result<int64_t> EnsureAttemptInTx(int64_t run_id, const std::string& job_id,
                                                  int64_t restart_count, int64_t in_job_seq = 0,
                                                  const std::string& cluster = "");
  // Writes every column of `a` (by a.id).
  [[nodiscard]] Status UpdateAttemptInTx(const AttemptRecord& a);
  [[nodiscard]] Result<AttemptRecord> GetAttempt(int64_t attempt_id);
  // In the order they happened.
  [[nodiscard]] Result<std::vector<AttemptRecord>> ListAttempts(int64_t run_id);

  // ---- steps
  // Inserts (or replaces, by attempt and step) a step row, marks rows of earlier attempts at the
  // same step superseded (or this one, when a later attempt already has the step) and raises the
  // attempt's last_step. The run's series rollups follow at COMMIT (series_rollups.h).
  [[nodiscard]] Status InsertStepInTx(const StepRecord& s);
  // InsertStepInTx for many rows at once, with the same result as inserting them one by one in
  // order (a later row of the same attempt and step wins), in a few multi-row statements: one
  // round trip per 256 rows instead of three per row, which is what a PostgreSQL server on
  // another host makes the cost of ingest.
  [[nodiscard]] Status InsertStepsInTx(const std::vector<StepRecord>& rows);
  [[nodiscard]] Result<std::vector<StepRecord>> ListSteps(int64_t run_id, const StepQuery& q = {});
  [[nodiscard]] Result<int64_t> CountSteps(int64_t run_id, bool include_superseded);
  // Non-finite (skipped) steps of the run: counts, and the first `limit` rows in step order.
  [[nodiscard]] Result<NonfiniteCounts> CountNonfiniteSteps(int64_t run_id);
  [[nodiscard]] Result<std::vector<StepRecord>> ListNonfiniteSteps(int64_t run_id,
                                                                   bool include_superseded,
                                                                   int64_t limit);

  [[nodiscard]] Status InsertMicrostepInTx(const MicrostepRecord& m);
  [[nodiscard]] Result<std::vector<MicrostepRecord>> ListMicrosteps(int64_t run_id);

  // ---- checkpoints
  [[nodiscard]] Status UpsertCheckpointInTx(const CheckpointRecord& c);
  // Newest step first.
  [[nodiscard]] Result<std::vector<CheckpointRecord>> ListCheckpoints(int64_t run_id);

  // ---- stop-save budgets and write probes (submit's grace check)
  [[nodiscard]] Status UpsertStopSaveBudgetInTx(const StopSaveBudgetRecord& b);
  // nullopt for a run submitted without a check (or before schema version 10).
  [[nodiscard]] Result<std::optional<StopSaveBudgetRecord>> GetStopSaveBudget(int64_t run_id);
  [[nodiscard]] Status PutWriteProbe(const WriteProbeRecord& p);
  [[nodiscard]] Result<std::optional<WriteProbeRecord>> GetWriteProbe(const std::string& folder);

  // ---- ingest cursors
  // Bytes of `path` already ingested (0 when never seen).
  [[nodiscard]] Result<int64_t> CursorInTx(const std::string& path);
  [[nodiscard]] Status SetCursorInTx(const std::string& path, int64_t run_id, int64_t offset,
                                     int64_t bad_lines_added, double now);

  // Code::kIo when the database file was deleted or replaced under this connection (a long-lived
  // process, `baton serve`, stops rather than write into an unlinked file).
  [[nodiscard]] Status CheckStillAtPath() const { return db_->CheckStillAtPath(); }
  // Refuses every write on this connection from now on (the web server's read pool).
  [[nodiscard]] Status SetQueryOnly() { return db_->SetQueryOnly(); }

  // Keeps the series rollups with the steps (default). Off only to measure their cost.
  void set_series_rollups(bool on) { rollups_->set_enabled(on); }

 private:
  // The connection, for the store's own modules only (store_internal.h): nothing outside
  // orchestrator/store/ writes SQL.
  friend class StoreInternal;
  Db& db() { return *db_; }

  explicit Store(std::unique_ptr<Db> db) : db_(std::move(db)) {}
  [[nodiscard]] Status Migrate();
  [[nodiscard]] Status ApplyMigration(const EmbeddedFile& f, int64_t number,
                                      bool check_foreign_keys);
  std::unique_ptr<Db> db_;
  // Series rollups of the steps written in the open transaction, flushed before its COMMIT.
  std::unique_ptr<RollupMaintainer> rollups_ = std::make_unique<RollupMaintainer>();
};

}  // namespace baton
