#include "orchestrator/history/attempt_log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "orchestrator/store/attempt_evidence.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace baton {

Result<json> ReadAttemptLogPage(const std::string& run_dir, const AttemptRecord& attempt,
                                const LogPageRequest& req) {
  const std::optional<std::string> rel = AttemptLogPath(attempt);
  if (!rel) {
    return Status::NotFound("job id '" + attempt.job_id + "' does not name a log file");
  }
  std::error_code ec;
  const fs::path root = fs::canonical(run_dir, ec);
  if (ec) return Status::NotFound("the run folder is not there: " + run_dir);
  json out{{"path", *rel}, {"exists", false},      {"size", 0}, {"from", 0},
           {"to", 0},      {"more_before", false}, {"text", ""}};
  const fs::path file = root / *rel;
  if (!fs::exists(fs::symlink_status(file, ec))) return out;  // nothing written yet
  const fs::path real = fs::canonical(file, ec);
  if (ec) return out;  // a dangling symlink: nothing to read
  // Inside the run folder, after every symlink: logs/ or the file may not point elsewhere.
  const std::string r = real.string(), base = root.string() + "/";
  if (r.compare(0, base.size(), base) != 0) {
    return Status::NotFound(*rel + " resolves outside the run folder: not shown");
  }
  if (!fs::is_regular_file(real, ec)) return Status::NotFound(*rel + " is not a regular file");
  std::ifstream in(real, std::ios::binary);
  if (!in) return Status::Io(*rel + ": cannot open for reading");
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  const int64_t to = std::clamp<int64_t>(req.before.value_or(size), 0, size);
  int64_t from = std::max<int64_t>(0, to - req.limit);
  std::string text(static_cast<size_t>(to - from), '\0');
  in.seekg(from);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (from > 0) {
    // Start at a whole line (the cut one belongs to the previous page) unless the page is one
    // line longer than itself.
    const size_t nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) {
      text.erase(0, nl + 1);
      from += static_cast<int64_t>(nl + 1);
    }
  }
  out["exists"] = true;
  out["size"] = size;
  out["from"] = from;
  out["to"] = from + static_cast<int64_t>(text.size());
  out["more_before"] = from > 0;
  out["text"] = std::move(text);
  return out;
}

}  // namespace baton
