// BuildInfo: the version and source revision a binary was built from, for `baton --version` and
// `baton-train --version` (what a bug report needs). The commit and whether the tree had changes
// are read from git by CMake at every build (schema/build_info.cmake); a source tree without
// .git says "unknown". The text is shared; baton-train adds its libtorch and CUDA lines.
// Constants only; thread-safe.
#pragma once

#include <string>

namespace baton {

namespace build_info {
extern const char* const kVersion;  // the project's version, "0.1.0"
extern const char* const kCommit;   // the full commit id, or "unknown"
extern const char* const kTree;     // "clean" | "dirty" (tracked files changed) | "unknown"
}  // namespace build_info

// "baton 0.1.0\ncommit 1f0c...e9 (dirty tree)": the program's name and version, then the commit
// ("commit unknown (not built from a git checkout)" without one); no newline at the end.
std::string VersionText(const std::string& program);

}  // namespace baton
