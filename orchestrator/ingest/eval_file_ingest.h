// Eval-file ingestion: a run's evals/step_<N>.json (schema/eval_results.h) into the store's eval
// rows (store/store_evals.h). In job mode these files are the only record of a checkpoint's
// value (a separate SLURM job writes them, with no events file of the run to append to); inline,
// the training job writes the same result as an `eval` event too, and whichever arrives last
// stands.
//
// A file is stored when its step has no row, or a row that holds another result; one that says
// what its row says is left alone, so a pass over an unchanged folder writes nothing. A file
// that cannot be read or parsed, or whose step is not the one its name holds, is skipped and
// named in the warnings, never fatal. Stateless; thread-compatible (one Store per thread).
#pragma once

#include "orchestrator/ingest/event_ingester.h"
#include "orchestrator/store/store.h"

namespace baton {

// Reads `run`'s evals folder (none, or a run without a folder yet: nothing to do). In the
// result: `records` = rows stored, `warnings` = one "<file>: <why>" per file skipped.
[[nodiscard]] Result<IngestStats> IngestEvalFiles(Store& store, const RunRecord& run);

}  // namespace baton
