#include "orchestrator/http/run_action_service.h"

#include "orchestrator/http/api_error.h"
#include "orchestrator/store/store_audit.h"
#include "orchestrator/submit/canceller.h"
#include "orchestrator/submit/resumer.h"

using nlohmann::json;

namespace baton {

namespace {

// The action itself: its answer body, or the failure to answer with.
Result<json> Perform(Store& store, const RunActionDeps& d, const Identity& who,
                     const RunRecord& run, RunAction action, double now) {
  const std::string id = std::to_string(run.id);
  if (action == RunAction::kCancel) {
    BATON_ASSIGN_OR_RETURN(const CancelRunResult r,
                           CancelRun(store, *d.slurm, id, who.user + " from the web page", now));
    return json{{"run_id", r.run_id},
                {"action", "cancel"},
                {"status", r.status},
                {"changed", r.changed},
                {"job_id", r.job_id.empty() ? json(nullptr) : json(r.job_id)}};
  }
  BATON_ASSIGN_OR_RETURN(const ResumeRunResult r,
                         ResumeRun(store, *d.slurm, {id, "", d.baton_bin, d.trainer_bin}, now));
  return json{{"run_id", r.run_id},
              {"action", "resume"},
              {"previous_status", r.previous_status},
              {"status", Name(RunStatus::kPending)},
              {"job_id", r.job_id},
              {"cancelled_job", r.cancelled_job},
              {"changed", true}};
}

}  // namespace

const char* RunActionName(RunAction a) { return a == RunAction::kCancel ? "cancel" : "resume"; }

ActionAnswer RunActionService::Act(const Identity& who, int64_t run_id, RunAction action) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fail = [](const Status& st) {
    return ActionAnswer{HttpStatusFor(st.code()), ErrorBody(st)};
  };
  Result<std::unique_ptr<Store>> opened = deps_.open_writer();
  if (!opened.ok()) return fail(opened.status());
  Store& store = **opened;
  Result<RunRecord> run = store.GetRun(run_id);
  if (!run.ok()) return fail(run.status());
  const double now = deps_.now();

  RunActionRecord audit;
  audit.run_id = run_id;
  audit.user = who.user;
  audit.action = RunActionName(action);
  audit.source = "web";
  audit.asked_at = now;
  ActionAnswer answer;
  const bool allowed = who.admin || (!run->owner.empty() && run->owner == who.user);
  if (!allowed) {
    const std::string owner = run->owner.empty() ? "no owner (an admin's)" : run->owner;
    answer = {403, ErrorBody(403, "forbidden",
                             "user " + who.user + " may not " + audit.action + " run " +
                                 std::to_string(run_id) + " of " + owner +
                                 ": only its owner or an admin may")};
    audit.result = "denied";
  } else {
    Result<json> done = Perform(store, deps_, who, *run, action, now);
    if (done.ok()) {
      answer = {200, *done};
      audit.result = "ok";
    } else {
      answer = fail(done.status());
      audit.result = "error";
    }
  }
  audit.http_status = answer.http_status;
  if (answer.http_status != 200) audit.message = answer.body["error"]["message"].get<std::string>();
  Result<int64_t> audited = AppendRunAction(store, audit);
  if (!audited.ok()) {
    // The action stands (or was refused) either way; the answer says the audit failed.
    answer.body["audit_error"] = audited.status().ToString();
  } else {
    answer.body["audit_id"] = *audited;
  }
  return answer;
}

}  // namespace baton
