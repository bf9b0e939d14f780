// What this build of baton-train can run, for checks that need to know it (a config asking for
// CUDA on a CPU build is a config error at load time, not an internal error at the first tensor).
// BATON_CUDA is defined for the whole trainer by CMake when it builds against a CUDA libtorch.
#pragma once

#include "schema/run_config.h"

namespace baton {

inline RunConfigOptions TrainerConfigOptions() {
  RunConfigOptions o;
#ifdef BATON_CUDA
  o.cuda = RunConfigOptions::Cuda::kYes;
#else
  o.cuda = RunConfigOptions::Cuda::kNo;
#endif
  // Read (and its absence reported, 78) only when a fresh start loads it: a resume does not.
  o.check_init_from = false;
  return o;
}

}  // namespace baton
