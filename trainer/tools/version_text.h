// TrainerVersionText: what `baton-train --version` prints — the version and source revision
// (schema/build_info.h, as `baton --version`), then the libtorch it was built against and its
// CUDA: the CUDA runtime version of a CUDA build and the devices visible now, or "none (a CPU
// build)". The lines a bug report needs. Thread-safe.
#pragma once

#include <string>

namespace baton {

std::string TrainerVersionText();

}  // namespace baton
