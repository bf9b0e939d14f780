// baton_alerts_fixture: writes run history into a real store as ingest and reconcile would, at
// the current time, so the alerts end-to-end test (alerts_e2e_test.sh) can drive `baton serve`
// through incidents without SLURM:
//
//   baton_alerts_fixture DB run NAME [ALERTS_YAML]   -> prints the new run's id (RUNNING)
//   baton_alerts_fixture DB attempt RUN JOB REASON   -> an attempt that ended now with REASON
//                                                       (REASON hang: a hang with a stack)
//   baton_alerts_fixture DB resume RUN JOB           -> a new attempt started now (running)
//   baton_alerts_fixture DB step RUN                 -> the last attempt finished a step now
//   baton_alerts_fixture DB status RUN STATUS        -> the run's status (FAILED, COMPLETED, ...)
//   baton_alerts_fixture DB eval RUN STEP LOSS       -> an eval result arrived now (a job's)
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "orchestrator/store/store.h"
#include "orchestrator/store/store_evals.h"
#include "schema/clock.h"

namespace baton {
namespace {

int Fail(const Status& st) {
  std::cerr << "baton_alerts_fixture: " << st.ToString() << "\n";
  return 1;
}

Status AddRun(Store& store, const std::string& name, const std::string& alerts_file) {
  NewRun n;
  n.name = name;
  n.config = "run: {}\n";
  if (!alerts_file.empty()) {
    std::ifstream in(alerts_file);
    std::ostringstream text;
    text << in.rdbuf();
    n.config += text.str();
  }
  n.run_dir = "/nonexistent/" + name;
  n.target_steps = 100;
  n.owner = "alice";
  n.cluster = "dev";
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(const int64_t id, store.CreateRunInTx(n, UnixTimeNow()));
    BATON_RETURN_IF_ERROR(store.SetRunStatusInTx(id, RunStatus::kRunning, "", UnixTimeNow()));
    std::cout << id << std::endl;
    return Status::Ok();
  });
}

Status AddAttempt(Store& store, int64_t run, const std::string& job, const std::string& reason) {
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(std::vector<AttemptRecord> all, store.ListAttempts(run));
    BATON_ASSIGN_OR_RETURN(const int64_t id,
                           store.EnsureAttemptInTx(run, job, static_cast<int64_t>(all.size())));
    BATON_ASSIGN_OR_RETURN(AttemptRecord a, store.GetAttempt(id));
    const double now = UnixTimeNow();
    a.nodes = "node7,node8";
    a.started_at = now - 60;
    a.ended_at = now;
    a.step0 = 10;
    a.last_step = 12;
    a.action = "requeue";
    a.end_reason = reason == "hang" ? "crashed" : reason;
    a.trainer_message = reason == "diverged" ? "loss is NaN for 20 steps in a row" : "";
    if (reason == "hang") {
      a.hang_detected_at = now;
      a.hang_last_heartbeat_at = now - 120;
      a.hang_stale_ranks = "1:micro-step";
      a.hang_stack = "Thread 1 (rank 1):\n#0 ncclAllReduce\n#1 train_step\n";
    }
    return store.UpdateAttemptInTx(a);
  });
}

Status AddRunningAttempt(Store& store, int64_t run, const std::string& job) {
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(std::vector<AttemptRecord> all, store.ListAttempts(run));
    BATON_ASSIGN_OR_RETURN(const int64_t id,
                           store.EnsureAttemptInTx(run, job, static_cast<int64_t>(all.size())));
    BATON_ASSIGN_OR_RETURN(AttemptRecord a, store.GetAttempt(id));
    a.nodes = "node9";
    a.started_at = UnixTimeNow();
    a.step0 = 12;
    a.last_step = 12;
    return store.UpdateAttemptInTx(a);
  });
}

Status AddStep(Store& store, int64_t run) {
  return store.Write([&]() -> Status {
    BATON_ASSIGN_OR_RETURN(std::vector<AttemptRecord> all, store.ListAttempts(run));
    if (all.empty()) return Status::NotFound("run has no attempt");
    StepRecord s;
    s.run_id = run;
    s.attempt_id = all.back().id;
    s.step = all.back().last_step.value_or(0);
    s.time = UnixTimeNow();
    s.loss = 1.5;
    return store.InsertStepInTx(s);
  });
}

Status AddEval(Store& store, int64_t run, int64_t step, double loss) {
  EvalRecord e;
  e.run_id = run;
  e.step = step;
  e.loss = loss;
  e.mode = "job";
  e.source = kEvalFromFile;
  e.arrived_at = UnixTimeNow();
  return store.Write([&] { return UpsertEvalInTx(store, e); });
}

}  // namespace
}  // namespace baton

int main(int argc, char** argv) {
  using namespace baton;
  if (argc < 4) {
    std::cerr << "usage: baton_alerts_fixture DB run|attempt|step|status|eval ...\n";
    return 64;
  }
  Result<std::unique_ptr<Store>> store = Store::Open(argv[1]);
  if (!store.ok()) return Fail(store.status());
  const std::string what = argv[2];
  Status st;
  if (what == "run") {
    st = AddRun(**store, argv[3], argc > 4 ? argv[4] : "");
  } else if (what == "attempt" && argc == 6) {
    st = AddAttempt(**store, std::stoll(argv[3]), argv[4], argv[5]);
  } else if (what == "resume" && argc == 5) {
    st = AddRunningAttempt(**store, std::stoll(argv[3]), argv[4]);
  } else if (what == "step") {
    st = AddStep(**store, std::stoll(argv[3]));
  } else if (what == "eval" && argc == 6) {
    st = AddEval(**store, std::stoll(argv[3]), std::stoll(argv[4]), std::stod(argv[5]));
  } else if (what == "status" && argc == 5) {
    const std::optional<RunStatus> s = Find<RunStatus>(argv[4]);
    if (!s) return Fail(Status::InvalidArgument(std::string("status ") + argv[4]));
    st = (*store)->Write(
        [&] { return (*store)->SetRunStatusInTx(std::stoll(argv[3]), *s, "test", UnixTimeNow()); });
  } else {
    std::cerr << "baton_alerts_fixture: unknown action " << what << "\n";
    return 64;
  }
  return st.ok() ? 0 : Fail(st);
}
