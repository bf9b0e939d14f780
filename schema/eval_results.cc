#include "schema/eval_results.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "schema/atomic_file.h"
#include "schema/input_file.h"

namespace baton {
namespace fs = std::filesystem;

Status WriteEvalResult(const RunFolder& run, const EvalEvent& result) {
  if (!result.step) return Status::Internal("an eval result needs its checkpoint's step");
  std::error_code ec;
  fs::create_directories(run.EvalsDir(), ec);
  if (ec) return Status::Io(run.EvalsDir() + ": cannot create the evals folder: " + ec.message());
  nlohmann::json j = result.ToJson();
  j["type"] = EvalEvent::kType;
  return WriteTextAtomic(run.EvalFile(*result.step), j.dump() + "\n");
}

EvalResults ReadEvalResults(const RunFolder& run) {
  EvalResults out;
  std::error_code ec;
  fs::directory_iterator it(run.EvalsDir(), ec);
  if (ec) return out;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    Result<std::string> text = ReadRegularFile(path, kMaxEvalResultBytes);
    if (!text.ok()) {
      out.problems.push_back(text.status().message());
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      out.problems.push_back(path + ": not a JSON object");
      continue;
    }
    EvalEvent e = EvalEvent::FromJson(j);
    if (!e.step || name != "step_" + std::to_string(*e.step) + ".json") {
      out.problems.push_back(path + ": no step, or a step its name does not hold");
      continue;
    }
    out.by_step[*e.step] = std::move(e);
  }
  return out;
}

double EvalMetric(const EvalEvent& result, const std::string& metric) {
  if (metric == "eval.loss") return result.loss;
  if (metric == "eval.loss_video") return result.loss_video;
  if (metric == "eval.loss_action") return result.loss_action;
  return kNoNumber;
}

bool IsEvalTarget(const RunConfig& config, int64_t step) {
  if (!config.eval.enabled() || step <= 0) return false;
  if (step == config.run.steps) return true;
  const int64_t every = config.checkpoint.every;
  if (every <= 0 || step % every != 0) return false;
  return (step / every) % std::max<int64_t>(config.eval.every, 1) == 0;
}

}  // namespace baton
