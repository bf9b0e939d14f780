// What the launcher checks, reads and clears in a run folder around its trainers: that the folder
// is a run folder before anything is written, `baton cancel`'s mark, and the heartbeats an
// earlier trainer left. Used by launcher.cc only; stateless functions over the filesystem.
#pragma once

#include <string>

#include "schema/status.h"

namespace baton {

// A run folder is a folder holding run.yaml (written by `baton submit`). Checked before anything
// is written, so a mistyped path creates nothing: not the folder, not events/ inside some
// other folder. A run.yaml that is there but broken is the config step's 78, not this.
[[nodiscard]] Status CheckRunDir(const std::string& run_dir);

// `baton cancel` writes the mark before it runs scancel, so a launcher that got scancel's TERM
// always finds it: the TERM then ends the run for good instead of counting as a preemption.
bool CancelRequested(const std::string& run_dir);

// Every rank's heartbeat file of an earlier trainer goes before a new one starts, so a stale
// record is never judged (HangWatch also ignores the records it finds at its start).
void ClearHeartbeats(const std::string& run_dir);

}  // namespace baton
