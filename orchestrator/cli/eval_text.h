// A run's eval results as terminal text, for `baton show`: how many checkpoints were evaluated,
// the best one, and a table of step and held-out losses (store/store_evals.h). Steps are the
// checkpoints' (as `baton checkpoints` prints them). Writes to std::cout; single-threaded.
#pragma once

#include <vector>

#include "orchestrator/store/store_evals.h"

namespace baton {

// Nothing when the run has no eval result (a run without eval: reads as before).
void PrintEvals(const std::vector<EvalRecord>& evals);

}  // namespace baton
