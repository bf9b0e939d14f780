#include "orchestrator/launcher/node_checks.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "orchestrator/nodes/incident_file.h"
#include "orchestrator/nodes/preflight.h"
#include "orchestrator/slurm/process_runner.h"
#include "orchestrator/slurm/srun_command.h"
#include "schema/clock.h"
#include "schema/exit_codes.h"

namespace baton {

namespace {

// Seconds the preflight step may take on all nodes (nvidia-smi on a sick node can hang).
constexpr double kPreflightTimeoutS = 180;

}  // namespace

bool PreflightPasses(const LaunchEnvironment& env, const std::string& run_dir, int64_t nodes,
                     int64_t seq, std::ostream& log) {
  if (env.preflight_bin.empty()) return true;  // outside an allocation, or turned off
  const std::string& self = env.preflight_bin;
  const std::string restart = std::to_string(env.restart_count);
  const std::vector<std::string> preflight = {self,    "preflight", run_dir,
                                              "--job", env.job_id,  "--restart",
                                              restart, "--seq",     std::to_string(seq)};
  const std::vector<std::string> argv =
      env.use_srun ? SrunOncePerNode(nodes, preflight) : preflight;
  Result<ProcessResult> r = RunProcess(argv, kPreflightTimeoutS);
  if (!r.ok() || r->timed_out) {
    log << "baton launch: warning: the preflight did not run: "
        << (r.ok() ? "timed out" : r.status().ToString()) << "\n";
    return true;
  }
  log << r->out << r->err;
  if (r->exit_code == kExitNodeUnhealthy) return false;
  if (r->exit_code != 0) {
    log << "baton launch: warning: the preflight step exited " << r->exit_code
        << "; training anyway\n";
  }
  return true;
}

void RecordLauncherIncidents(const LaunchEnvironment& env, const std::string& run_dir, int64_t seq,
                             const HangReport* hang, int exit_code, std::ostream& log) {
  NodeIncidentReport r;
  r.job_id = env.job_id;
  r.restart_count = env.restart_count;
  r.in_job_seq = seq;
  r.source = "launcher";
  r.at = UnixTimeNow();
  if (hang != nullptr && !hang->stale.empty()) {
    std::set<std::string> hosts;
    for (const StaleRank& s : hang->stale)
      hosts.insert(s.beat.node.empty() ? s.beat.host : s.beat.node);
    if (hosts.size() != 1) return;  // several nodes stalled: no single host to blame
    const StaleRank& s = hang->stale.front();
    r.host = *hosts.begin();
    r.kind = "hang";
    r.rank = s.beat.rank;
    r.evidence = "rank " + std::to_string(s.beat.rank) + " heartbeat stale in " +
                 Name(s.beat.phase) + " at step " + std::to_string(s.beat.step) + " for " +
                 std::to_string(int64_t(s.age_s)) + " s";
  } else if (!env.use_srun && (exit_code == 128 + SIGBUS || exit_code == 128 + SIGSEGV ||
                               exit_code == 128 + SIGILL)) {
    r.host = ThisNodeName();
    r.kind = "signal";
    r.evidence = "the trainer was killed by " + std::string(strsignal(exit_code - 128));
  } else {
    return;
  }
  if (Status st = WriteNodeIncident(run_dir, r); !st.ok()) {
    log << "baton launch: warning: node incident not recorded: " << st.ToString() << "\n";
  }
}

void RecordStragglers(const LaunchEnvironment& env, const std::string& run_dir, int64_t seq,
                      const std::vector<Straggler>& stragglers, std::ostream& log) {
  for (const Straggler& s : stragglers) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "rank %ld: steps of %.3f s, over %ld steps, against a median of %.3f s",
                  long(s.rank), s.step_s, long(s.steps), s.median_s);
    NodeIncidentReport r{env.job_id,  env.restart_count, seq,  s.rank,       s.node,
                         "straggler", "launcher",        text, UnixTimeNow()};
    if (Status st = WriteNodeIncident(run_dir, r); !st.ok()) {
      log << "baton launch: warning: straggler not recorded: " << st.ToString() << "\n";
    }
  }
}

void ObserveStragglers(const HangWatch& watch, int64_t ranks, StragglerWatch* stragglers) {
  std::map<int64_t, HeartbeatRecord> beats;
  for (int64_t r = 0; r < ranks; ++r) {
    if (std::optional<HeartbeatRecord> b = watch.Current(r)) beats[r] = *b;
  }
  stragglers->Observe(beats);
}

}  // namespace baton
