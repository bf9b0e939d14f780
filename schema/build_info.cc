#include "schema/build_info.h"

namespace baton {

std::string VersionText(const std::string& program) {
  const std::string commit = build_info::kCommit;
  const std::string tree = build_info::kTree;
  std::string out = program + " " + build_info::kVersion + "\ncommit " + commit;
  if (commit == "unknown") {
    out += " (not built from a git checkout)";
  } else {
    out += tree == "unknown" ? " (tree state unknown)" : " (" + tree + " tree)";
  }
  return out;
}

}  // namespace baton
