// AttemptLog: one page of an attempt's log file (<run folder>/logs/<job_id>.out) for the run
// page's log viewer and `baton logs`, read from the end backwards: one of the history views the
// CLI and the web API share.
//
// Only the file the attempt's job id names inside the run folder is ever opened: the job id must
// be a plain file-name word (attempt_evidence.h), and the resolved path (symlinks followed) must
// still lie inside the resolved run folder — a log that is a symlink to anything outside is
// refused, as is a run folder that is itself missing. The bytes come back as they are (the JSON
// writer replaces invalid UTF-8); the UI shows them as text. Pure file reads; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "orchestrator/store/records.h"
#include "schema/status.h"

namespace baton {

inline constexpr int64_t kDefaultLogPageBytes = 64 * 1024;
inline constexpr int64_t kMaxLogPageBytes = 1024 * 1024;

struct LogPageRequest {
  std::optional<int64_t> before;  // end of the page (byte offset, exclusive); none = file end
  int64_t limit = kDefaultLogPageBytes;
};

// {path, exists, size, from, to, more_before, text}: bytes [from, to) of the file, `from` moved
// forward to a line start when the page does not begin the file. `exists` false (and no text)
// while the job has written nothing yet.
[[nodiscard]] Result<nlohmann::json> ReadAttemptLogPage(const std::string& run_dir,
                                                        const AttemptRecord& attempt,
                                                        const LogPageRequest& req);

}  // namespace baton
