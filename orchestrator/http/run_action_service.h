// RunActionService: the web server's write actions on a run — POST /api/runs/{id}/cancel and
// /resume — through the same code as `baton cancel` and `baton resume` (canceller.h, resumer.h).
//
// Only the run's owner (runs.owner) or an admin may act: anyone else gets 403, and a run without
// an owner (submitted before schema version 11) is the admins'. Every answered request for an
// existing run is audited (store_audit.h): who, when, the action, ok | denied | error with the
// HTTP status and the message. Actions run one at a time (a mutex), each on its own writer
// connection opened for it: they are rare, and the read pool's connections refuse writes.
//
// Borrows the SLURM client (used only under the mutex); thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "orchestrator/slurm/slurm_client.h"
#include "orchestrator/store/store.h"
#include "orchestrator/store/store_tokens.h"
#include "schema/status.h"

namespace baton {

enum class RunAction { kCancel, kResume };
const char* RunActionName(RunAction a);  // "cancel" | "resume"

// An HTTP answer: the status and its JSON body (the one error shape for failures).
struct ActionAnswer {
  int http_status = 200;
  nlohmann::json body;
};

struct RunActionDeps {
  std::function<Result<std::unique_ptr<Store>>()> open_writer;
  SlurmClient* slurm = nullptr;
  std::string baton_bin;    // written into a resumed run's sbatch.sh
  std::string trainer_bin;  // plans an edited config's memory ("" when none)
  std::function<double()> now;
};

class RunActionService {
 public:
  explicit RunActionService(RunActionDeps deps) : deps_(std::move(deps)) {}

  // 404 for an unknown run, 403 for a user who may not act on it, else what the action gave.
  ActionAnswer Act(const Identity& who, int64_t run_id, RunAction action);

 private:
  RunActionDeps deps_;
  std::mutex mu_;
};

}  // namespace baton
