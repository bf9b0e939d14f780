// The audit of write actions on runs (run_actions, schema version 11): every cancel and resume
// asked of a run from the web page or the CLI, allowed or not — who, when, what, the result. The
// run page shows them newest first.
//
// Part of the store, the only code that speaks SQL. Free functions over a Store the caller owns;
// thread-compatible, like the Store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/store/store.h"
#include "schema/status.h"

namespace baton {

struct RunActionRecord {
  int64_t id = 0;  // assigned by the store
  int64_t run_id = 0;
  std::string user;    // the identity that asked
  std::string action;  // cancel | resume
  std::string source;  // web | cli
  double asked_at = 0;
  std::string result;       // ok | denied | error
  int64_t http_status = 0;  // the web answer's status; 0 from the CLI
  std::string message;      // what happened, in words
};

// Appends one row in its own transaction; returns its id.
[[nodiscard]] Result<int64_t> AppendRunAction(Store& store, const RunActionRecord& a);
// A page of the run's actions, newest first.
[[nodiscard]] Result<std::vector<RunActionRecord>> ListRunActions(Store& store, int64_t run_id,
                                                                  int64_t limit,
                                                                  int64_t offset = 0);
[[nodiscard]] Result<int64_t> CountRunActions(Store& store, int64_t run_id);

}  // namespace baton
