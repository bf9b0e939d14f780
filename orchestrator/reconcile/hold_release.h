// The requeue hold, cut safely: after `scontrol requeue` SLURM holds the job (BeginTime = requeue
// + cred_expire + 1, ~2 min, then the next scheduling pass), which is most of a preemption's
// cost. The sync pass of `baton watch` and `baton serve` ends that hold with `scontrol update
// JobId=J StartTime=now` when it is safe:
//   - the job is the run's, held after a requeue (PENDING, Reason BeginTime) whose Restarts is
//     one past the run's last attempt;
//   - that attempt ended cleanly: the launcher's attempt_end (requeue, preempted), the trainer's
//     exit 75, and a committed checkpoint at the step it stopped at (its event, and its folder
//     verified as the trainer verifies it: manifest, every file's size and hash, the steps); or
//     a node failed the preflight (requeue, node_unhealthy: no trainer ran), once the reconcile
//     pass has put the excluded nodes in the job's ExcNodeList (docs/nodes.md);
//   - slurm.release_hold_after_s have passed since it ended (slurmd refuses a launch whose new
//     credential is not newer, in whole seconds, than the revocation of the previous one);
//   - slurm.release_requeue_hold is not false in the run's frozen config.
// Every release is recorded on that attempt (hold_released_at) and reported as a change line. A
// refusal (a site that forbids it) is recorded too (hold_release_error), reported once, and not
// tried again for the run: it waits out the hold. Stateless; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"

namespace baton {

// Whether `job` is held after a requeue (what ReleaseRequeueHold acts on).
bool HeldAfterRequeue(const JobInfo& job);

// Releases the hold of `run`'s job `job` (as SLURM described it just now) when every condition
// above holds; otherwise does nothing. kUnavailable when SLURM could not be reached (nothing
// recorded); store errors. A refusal is not an error: it is recorded and reported.
[[nodiscard]] Status ReleaseRequeueHold(Store& store, SlurmClient& slurm, const RunRecord& run,
                                        const JobInfo& job, double now,
                                        std::vector<std::string>* changes);

}  // namespace baton
