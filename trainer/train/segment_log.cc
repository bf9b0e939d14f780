#include "trainer/train/segment_log.h"

#include <filesystem>

#include "schema/run_folder.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

void SegmentLog::SetPath(const std::string& explicit_path, const std::string& run_dir,
                         const std::string& job, int64_t restart) {
  if (!explicit_path.empty()) {
    path_ = explicit_path;
  } else if (!run_dir.empty()) {
    path_ = RunFolder{run_dir}.EventsFile(job, restart);
  }
}

void SegmentLog::Open() {
  if (!leader() || writer_.is_open()) return;
  BATON_CHECK_OK(writer_.Open(path_, "trainer"), "check that the run directory is writable");
}

void SegmentLog::Check(const Status& st) {
  BATON_CHECK_OK(st, "check that the run directory is writable");
}

std::string ErrorMessage(const std::string& what) {
  const size_t at = what.find("\n  at ");
  return at == std::string::npos ? what : what.substr(0, at);
}

void SegmentLog::WriteError(int exit_code, const std::string& what) {
  if (error_written_ || path_.empty()) return;
  error_written_ = true;
  // Only a run folder that exists gets an events file: an error about a mistyped folder must
  // not create it.
  if (!writer_.is_open()) {
    if (only_open_file_) return;
    std::error_code ec;
    const fs::path events_dir = fs::path(path_).parent_path();
    if (!fs::is_directory(events_dir.parent_path(), ec)) return;
    if (!writer_.Open(path_, "trainer").ok()) return;
  }
  SegmentEndEvent e;
  if (step_ >= 0) e.step = step_;
  e.reason = Name(SegmentEndReason::kError);
  e.exit_code = exit_code;
  e.rank = rank_;
  e.message = ErrorMessage(what);
  (void)writer_.Write(e, /*sync=*/true);
}

}  // namespace baton
