#include "orchestrator/cli/cli_audit.h"

#include <iostream>

#include "orchestrator/reconcile/job_permission.h"
#include "orchestrator/store/store_audit.h"

namespace baton {

void AuditCliAction(Store& store, const std::string& run, const std::string& action,
                    const Status& result, double now) {
  Result<RunRecord> r = store.FindRun(run);
  if (!r.ok()) return;
  RunActionRecord a;
  a.run_id = r->id;
  a.user = CurrentActingUser().name;
  a.action = action;
  a.source = "cli";
  a.asked_at = now;
  a.result = result.ok() ? "ok" : "error";
  a.message = result.ok() ? "" : result.message();
  if (Result<int64_t> id = AppendRunAction(store, a); !id.ok()) {
    std::cerr << "baton: warning: the " << action << " of run " << r->id
              << " was not audited: " << id.status().ToString() << "\n";
  }
}

}  // namespace baton
