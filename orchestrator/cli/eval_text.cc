#include "orchestrator/cli/eval_text.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "orchestrator/cli/cli_context.h"

namespace baton {

namespace {

// Six significant digits: enough to tell checkpoints apart; --json has every digit.
std::string LossText(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void PrintEvals(const std::vector<EvalRecord>& evals) {
  if (evals.empty()) return;
  const std::optional<EvalRecord> best = BestEval(evals);
  std::cout << "  evals    " << evals.size() << " checkpoint" << (evals.size() == 1 ? "" : "s")
            << " evaluated";
  if (best) {
    std::cout << "; best loss " << LossText(best->loss) << " at step " << best->step;
  }
  std::cout << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const EvalRecord& e : evals) {
    rows.push_back({std::to_string(e.step), LossText(e.loss), LossText(e.loss_video),
                    LossText(e.loss_action)});
  }
  std::ostringstream table;
  PrintTable(table, {"STEP", "LOSS", "LOSS_VIDEO", "LOSS_ACTION"}, rows);
  std::istringstream lines(table.str());
  for (std::string line; std::getline(lines, line);) std::cout << "           " << line << "\n";
}

}  // namespace baton
