#include "orchestrator/launcher/run_folder_checks.h"

#include <filesystem>
#include <system_error>

#include "schema/run_folder.h"

namespace fs = std::filesystem;

namespace baton {

Status CheckRunDir(const std::string& run_dir) {
  std::error_code ec;
  const fs::file_status dir = fs::status(run_dir, ec);
  if (dir.type() == fs::file_type::not_found) {
    return Status::NotFound("no run folder '" + run_dir + "' (nothing was created)");
  }
  if (ec) return Status::Io("cannot inspect the run folder " + run_dir + ": " + ec.message());
  if (!fs::is_directory(dir)) {
    return Status::NotFound("'" + run_dir + "' is not a run folder: not a directory");
  }
  const std::string config = RunFolder{run_dir}.RunYaml();
  const fs::file_status config_status = fs::status(config, ec);
  if (config_status.type() == fs::file_type::not_found) {
    return Status::NotFound("'" + run_dir + "' is not a run folder: " + config +
                            " does not exist (nothing was created)");
  }
  if (ec) return Status::Io("cannot inspect " + config + ": " + ec.message());
  return Status::Ok();
}

bool CancelRequested(const std::string& run_dir) {
  std::error_code ec;
  return fs::exists(RunFolder{run_dir}.CancelMark(), ec);
}

void ClearHeartbeats(const std::string& run_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RunFolder{run_dir}.HeartbeatDir(), ec)) {
    std::error_code e2;
    if (e.path().filename().string().rfind("rank-", 0) == 0) fs::remove(e.path(), e2);
  }
}

}  // namespace baton
