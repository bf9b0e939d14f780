// The step row from the trainer's step event (schema/event_records.h StepEvent): one table of
// the fields a row takes from the event, each an event field and the row field it fills, so a
// new per-step figure is one line here (plus its column in record_columns.cc and a migration).
//
// The row's own fields — run, attempt, step index (required: the caller checks it), time — come
// from the ingester, as does `superseded`, which only the store sets. Part of the store; pure
// functions; thread-safe.
#pragma once

#include <cstdint>

#include "orchestrator/store/records.h"
#include "schema/event_records.h"

namespace baton {

// Calls field(event member, record member) once per field the row takes from the event.
template <class F>
void ForEachStepEventField(F&& field) {
  field(&StepEvent::lr, &StepRecord::lr);
  field(&StepEvent::loss, &StepRecord::loss);
  field(&StepEvent::loss_video, &StepRecord::loss_video);
  field(&StepEvent::loss_action, &StepRecord::loss_action);
  field(&StepEvent::grad_norm, &StepRecord::grad_norm);
  field(&StepEvent::tokens, &StepRecord::tokens);
  field(&StepEvent::padded_tokens, &StepRecord::padded_tokens);
  field(&StepEvent::samples, &StepRecord::samples);
  field(&StepEvent::valid_frames, &StepRecord::valid_frames);
  field(&StepEvent::padded_frames, &StepRecord::padded_frames);
  field(&StepEvent::step_time_s, &StepRecord::step_time_s);
  field(&StepEvent::tokens_per_s, &StepRecord::tokens_per_s);
  field(&StepEvent::in_warmup, &StepRecord::in_warmup);
  field(&StepEvent::epoch, &StepRecord::epoch);
  field(&StepEvent::nonfinite, &StepRecord::nonfinite);
  field(&StepEvent::nonfinite_episodes, &StepRecord::nonfinite_episodes);
}

// The row of event `e` (whose step is set) for `attempt_id` of `run_id`, logged at `time`.
StepRecord StepRecordOf(const StepEvent& e, int64_t run_id, int64_t attempt_id, double time);

}  // namespace baton
