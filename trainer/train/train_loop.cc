#include "trainer/train/train_loop.h"

#include <c10/util/Exception.h>

#include <string>

#include "schema/exit_codes.h"
#include "trainer/fail.h"
#include "trainer/train/segment_log.h"
#include "trainer/train/segment_setup.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/trainer_environment.h"
#include "trainer/train/training_segment.h"

namespace baton {

int Train(const TrainOptions& opt) {
  InstallStopSignalHandlers();
  const TrainerEnvironment environment = TrainerEnvironmentFromProcess();
  SegmentLog log;
  log.SetPath(opt.events_path, opt.run_dir, environment.JobOrLocal(), environment.restart_count);
  // Every way out of a segment leaves a segment_end record saying why (docs/events.md).
  try {
    TrainingSegment segment(opt, environment, log);
    return segment.Run();
  } catch (const FatalError& e) {
    log.WriteError(e.exit_code(), e.what());
    throw;
  } catch (const c10::Error& e) {
    log.WriteError(kExitInternal,
                   std::string("internal error in libtorch: ") + e.what_without_backtrace());
    throw;
  } catch (const std::exception& e) {
    log.WriteError(kExitInternal, std::string("internal error: ") + e.what());
    throw;
  }
}

}  // namespace baton
