// The run folder's layout, named once: every file of a run folder that both binaries (and the
// tests) meet is spelled here and nowhere else (docs/design.md, "On disk").
//
//   <root>/run.yaml                                the resolved config, frozen at submit
//   <root>/sbatch.sh                               the job script
//   <root>/logs/<job_id>.out                       the job's stdout and stderr (sbatch --output)
//   <root>/events/<job_id>.<restart_count>.jsonl   one events file per SLURM job attempt
//   <root>/events/<job_id>.<restart_count>.<seq>.jsonl   ... and per restart of the trainer
//                                                  inside that job (seq 1, 2, ...; the launcher)
//   <root>/heartbeat/rank-<NNNNN>                  each rank's progress, rewritten in place
//                                                  (schema/heartbeat_record.h)
//   <root>/checkpoints/checkpoint_step_<N>/        schema/checkpoint_manifest.h
//   <root>/evals/step_<N>.json                     a committed checkpoint's eval result, written
//                                                  once, atomically (schema/eval_results.h)
//   <root>/CANCELLED                               `baton cancel`'s mark, written before scancel:
//                                                  the launcher never requeues, nor trains, a
//                                                  run that has it (`baton resume` removes it)
//
// Pure string functions and one directory listing; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton {

struct RunFolder {
  std::string root;

  std::string RunYaml() const;
  std::string SbatchScript() const;
  std::string LogsDir() const;
  std::string LogFile(const std::string& job_id) const;
  std::string EventsDir() const;
  std::string EventsFile(const std::string& job_id, int64_t restart_count,
                         int64_t in_job_seq = 0) const;
  std::string CheckpointsDir() const;
  std::string CheckpointDir(int64_t step) const;
  std::string CancelMark() const;
  std::string EvalsDir() const;
  std::string EvalFile(int64_t step) const;  // evals/step_<N>.json
  std::string HeartbeatDir() const;
  std::string HeartbeatFile(int64_t rank) const;  // heartbeat/rank-00003

  // The "<job>.<restart>.jsonl" files under events/, absolute, in attempt order (numeric job ids
  // by value, then restart count).
  std::vector<std::string> ListEventFiles() const;
};

// "<job_id>.<restart_count>.jsonl", or "<job_id>.<restart_count>.<seq>.jsonl" for seq > 0.
std::string EventsFileName(const std::string& job_id, int64_t restart_count,
                           int64_t in_job_seq = 0);
// Splits "<job>.<restart>.jsonl" (seq 0) and "<job>.<restart>.<seq>.jsonl"; false for any other
// name. SLURM job ids hold no '.', so "<a>.<b>.<c>" is always job a.
bool ParseEventsFileName(const std::string& file_name, std::string* job_id, int64_t* restart,
                         int64_t* in_job_seq = nullptr);

}  // namespace baton
