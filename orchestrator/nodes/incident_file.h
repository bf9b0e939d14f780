// Incident files: how code on a compute node (the launcher, `baton preflight`) hands an incident
// it attributed to a node to the sync pass, which records it in the ledger (docs/nodes.md,
// "Incident files").
//
// One small JSON file per incident,
// RUN_DIR/nodes/incident-<job>.<restart>.<seq>.<host>.<kind>.json, written atomically (temp name,
// fsync, rename): several nodes write at once on a shared filesystem without appending to one file.
// The reader trusts nothing in them: a host that is not a valid host name, an unknown kind, a field
// of the wrong type or a file over kMaxIncidentFileBytes is refused with a note and never recorded.
// Pure I/O; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace baton {

inline constexpr int64_t kMaxIncidentFileBytes = 16 * 1024;

struct NodeIncidentReport {
  std::string job_id;
  int64_t restart_count = 0;
  int64_t in_job_seq = 0;
  int64_t rank = -1;   // -1: no single rank
  std::string host;    // SLURM's node name
  std::string kind;    // hang | signal | preflight | ...
  std::string source;  // launcher | preflight
  std::string evidence;
  double at = 0;  // Unix seconds
};

// RUN_DIR/nodes
std::string NodeIncidentDir(const std::string& run_dir);

// kInvalidArgument for a host that is not a valid host name or a kind that is not a word (the
// incident is then not evidence); kIo when the file cannot be written.
[[nodiscard]] Status WriteNodeIncident(const std::string& run_dir, const NodeIncidentReport& r);

struct NodeIncidentFiles {
  std::vector<NodeIncidentReport> incidents;
  std::vector<std::string> refused;  // "<file>: <why>"
};
// Every incident file of the run (none when the folder does not exist).
NodeIncidentFiles ReadNodeIncidents(const std::string& run_dir);

}  // namespace baton
