// The CLI's entries in the audit of write actions (store_audit.h): `baton cancel` and `baton
// resume` record who asked (the Unix user), when, and what came of it, as the web server's routes
// do. Single-threaded.
#pragma once

#include <string>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

// Appends the row for `action` (cancel | resume) on `run` (id or name) with `result`. A run that
// does not exist gets none; a failure to write it is a warning on stderr, never the command's
// error (the action itself is done or not done either way).
void AuditCliAction(Store& store, const std::string& run, const std::string& action,
                    const Status& result, double now);

}  // namespace baton
