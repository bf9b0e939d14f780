// Helpers for the orchestrator's unit tests: a store in a temp folder, a run row, and event
// lines written by hand. Test-only; single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>

#include "orchestrator/store/store.h"
#include "schema/run_folder.h"
#include "tests/common/temp_dir.h"
#include "tests/common/test_store.h"

namespace baton::test {

inline std::unique_ptr<Store> OpenStore(const std::string& path) {
  Result<std::unique_ptr<Store>> s = Store::Open(TestStore(path));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

inline RunRecord MakeRun(Store& store, const std::string& run_dir, const std::string& name = "r",
                         int64_t target = 10) {
  int64_t id = 0;
  Status st = store.Write([&]() -> Status {
    NewRun n;
    n.name = name;
    n.config = "run: {}";
    n.run_dir = run_dir;
    n.target_steps = target;
    n.max_restarts = 100;
    n.max_failures = 3;
    Result<int64_t> r = store.CreateRunInTx(n, 1.0);
    if (!r.ok()) return r.status();
    id = *r;
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return store.GetRun(id).value();
}

// A run whose job is `job` (submitted at time 1), as the store reads it back.
inline RunRecord MakeRunWithJob(Store& store, const std::string& run_dir, const std::string& name,
                                int64_t target, const std::string& job) {
  const RunRecord run = MakeRun(store, run_dir, name, target);
  const Status st = store.Write([&] { return store.SetRunJobInTx(run.id, job, 1); });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return store.GetRun(run.id).value();
}

inline void Append(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::app) << text;
}

inline std::string StepLine(int64_t step, double loss = 1.0) {
  return "{\"type\":\"step\",\"time\":1,\"source\":\"trainer\",\"step\":" + std::to_string(step) +
         ",\"lr\":0.001,\"loss\":" + std::to_string(loss) + ",\"tokens\":10,\"in_warmup\":false}\n";
}

inline std::string StartLine(const std::string& mode, int64_t step0) {
  return "{\"type\":\"attempt_start\",\"time\":1,\"source\":\"launcher\",\"job_id\":\"7\","
         "\"restart_count\":0,\"nodes\":\"n1\",\"checkpoint\":null,\"mode\":\"" +
         mode + "\",\"step0\":" + std::to_string(step0) + ",\"resume_warmup_steps\":0}\n";
}

// `run` wrote attempt 0 of its job: a fresh start, steps 1..last, then `tail` (not ingested yet).
inline void WriteFirstAttempt(const RunRecord& run, int last, const std::string& tail = "") {
  std::string text = StartLine("fresh", 0);
  for (int s = 1; s <= last; ++s) text += StepLine(s);
  Append(RunFolder{run.run_dir}.EventsFile(run.job_id, 0), text + tail);
}

inline std::string EndLine(const std::string& action, const std::string& reason, int code) {
  return "{\"type\":\"attempt_end\",\"time\":2,\"source\":\"launcher\",\"exit_code\":" +
         std::to_string(code) + ",\"action\":\"" + action + "\",\"reason\":\"" + reason + "\"}\n";
}

}  // namespace baton::test
