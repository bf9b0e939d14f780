#include "orchestrator/store/step_event_fields.h"

#include <type_traits>

namespace baton {

StepRecord StepRecordOf(const StepEvent& e, int64_t run_id, int64_t attempt_id, double time) {
  StepRecord r;
  r.run_id = run_id;
  r.attempt_id = attempt_id;
  r.step = e.step.value_or(0);
  r.time = time;
  ForEachStepEventField([&](auto event_field, auto record_field) {
    using From = std::decay_t<decltype(e.*event_field)>;
    using To = std::decay_t<decltype(r.*record_field)>;
    static_assert(std::is_same_v<From, To>, "a step field keeps its type from event to row");
    r.*record_field = e.*event_field;
  });
  return r;
}

}  // namespace baton
