// What the launcher does about nodes (docs/nodes.md): the preflight on every node of the job
// before a trainer starts, and the incidents only the launcher can attribute (the host of a hang's
// stale ranks; a trainer outside srun killed by SIGBUS, SIGSEGV or SIGILL on this node; a rank
// that stays slow against the others, straggler_watch.h). Both go
// to the run folder as incident files (orchestrator/nodes/incident_file.h) that the sync pass
// puts in the ledger. Not thread-safe (runs processes).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "orchestrator/launcher/hang_watch.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/launcher/straggler_watch.h"

namespace baton {

// `baton preflight RUN_DIR --job J --restart R --seq S` once per node of the allocation (srun, one
// task a node; on this host under BATON_NO_SRUN); nothing outside an allocation. False when a node
// failed (it wrote its incident file); a preflight that could not be run at all is logged and
// passes (baton's own tooling failing is not a node's fault). BATON_NO_PREFLIGHT=1 skips it.
bool PreflightPasses(const LaunchEnvironment& env, const std::string& run_dir, int64_t nodes,
                     int64_t seq, std::ostream& log);

// The launcher's own incidents after a trainer ended: a hang whose stale ranks all ran on one
// node names that node; a trainer run without srun that a node-fault signal killed names this
// node. Anything else names no single host and is not recorded.
void RecordLauncherIncidents(const LaunchEnvironment& env, const std::string& run_dir, int64_t seq,
                             const HangReport* hang, int exit_code, std::ostream& log);

// The stragglers the watch named during the trainer (kind straggler, one per rank).
void RecordStragglers(const LaunchEnvironment& env, const std::string& run_dir, int64_t seq,
                      const std::vector<Straggler>& stragglers, std::ostream& log);

// Feeds `stragglers` the ranks' current records from the hang watch (each turn of the wait).
void ObserveStragglers(const HangWatch& watch, int64_t ranks, StragglerWatch* stragglers);

}  // namespace baton
