#include "orchestrator/nodes/preflight.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "orchestrator/slurm/process_runner.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

// Seconds nvidia-smi may take (a wedged driver hangs it; that is a failed node).
constexpr double kNvidiaSmiTimeoutS = 30;

// One nvidia-smi query; lines of "a, b, c". `unsupported` when the driver rejects the fields.
struct GpuQuery {
  std::vector<std::vector<std::string>> rows;
  bool unsupported = false;
  std::string error;  // nvidia-smi failed otherwise: the node is unhealthy
};

GpuQuery QueryGpus(const std::string& smi, const std::string& fields) {
  GpuQuery q;
  Result<ProcessResult> r = RunProcess(
      {smi, "--query-gpu=" + fields, "--format=csv,noheader,nounits"}, kNvidiaSmiTimeoutS);
  if (!r.ok()) {
    q.error = r.status().message();
    return q;
  }
  if (r->timed_out || r->exit_code != 0) {
    const std::string text = r->out + r->err;
    if (text.find("not a valid field") != std::string::npos ||
        text.find("Invalid") != std::string::npos) {
      q.unsupported = true;
    } else {
      q.error = r->timed_out ? "nvidia-smi did not answer" : "nvidia-smi failed: " + text;
    }
    return q;
  }
  std::istringstream in(r->out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) {
      while (!cell.empty() && cell.front() == ' ') cell.erase(0, 1);
      row.push_back(cell);
    }
    if (!row.empty()) q.rows.push_back(row);
  }
  return q;
}

// A cell that reports trouble: a positive count or "Yes" ("[N/A]", "N/A", "0", "No" are fine).
bool Bad(const std::string& cell) {
  if (cell == "Yes") return true;
  char* end = nullptr;
  const long v = std::strtol(cell.c_str(), &end, 10);
  return end != cell.c_str() && *end == '\0' && v > 0;
}

PreflightCheck CheckGpu() {
  const std::string smi = FindExecutable("nvidia-smi");
  if (smi.empty()) return {"gpu", "skipped", "no nvidia-smi on this node (a CPU node)"};
  std::string problems, skipped;
  const std::vector<std::pair<std::string, std::string>> queries = {
      {"index,ecc.errors.uncorrected.volatile.total", "uncorrected ECC errors"},
      {"index,retired_pages.pending", "retired pages pending"},
      {"index,remapped_rows.failure", "remapped-row failure"}};
  for (const auto& [fields, what] : queries) {
    const GpuQuery q = QueryGpus(smi, fields);
    if (!q.error.empty()) return {"gpu", "failed", q.error};
    if (q.unsupported) {
      skipped += (skipped.empty() ? "" : ", ") + what;
      continue;
    }
    for (const std::vector<std::string>& row : q.rows) {
      if (row.size() >= 2 && Bad(row[1]))
        problems += (problems.empty() ? "" : "; ") + ("GPU " + row[0] + ": " + what + " " + row[1]);
    }
  }
  if (!problems.empty()) return {"gpu", "failed", problems};
  return {"gpu", "ok", skipped.empty() ? "" : "not reported by this driver: " + skipped};
}

PreflightCheck CheckWritable(const std::string& run_dir, const std::string& node) {
  const std::string path = run_dir + "/.preflight-" + node + "-" + std::to_string(getpid());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return {"writable", "failed", "cannot create a file in " + run_dir};
  const std::string block(4096, 'x');
  const bool wrote = ::write(fd, block.data(), block.size()) == ssize_t(block.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  ::unlink(path.c_str());
  if (!wrote || !synced) return {"writable", "failed", "cannot write and fsync in " + run_dir};
  return {"writable", "ok", ""};
}

PreflightCheck CheckSpace(const std::string& run_dir) {
  struct statvfs st {};
  if (::statvfs(run_dir.c_str(), &st) != 0)
    return {"space", "failed", "cannot stat the filesystem of " + run_dir};
  const int64_t free_bytes = int64_t(st.f_bavail) * int64_t(st.f_frsize);
  const int64_t need = NextCheckpointBytes(run_dir);
  const std::string text = std::to_string(free_bytes >> 20) +
                           " MiB free, the next checkpoint "
                           "needs " +
                           std::to_string(need >> 20) + " MiB";
  return {"space", free_bytes >= need ? "ok" : "failed", text};
}

}  // namespace

bool PreflightReport::ok() const {
  for (const PreflightCheck& c : checks) {
    if (c.result == "failed") return false;
  }
  return true;
}

std::string PreflightReport::FailureText() const {
  std::string out;
  for (const PreflightCheck& c : checks) {
    if (c.result == "failed") out += (out.empty() ? "" : "; ") + c.name + ": " + c.detail;
  }
  return out;
}

std::string ThisNodeName() {
  const char* v = std::getenv("SLURMD_NODENAME");
  if (v != nullptr && *v != '\0') return v;
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

int64_t NextCheckpointBytes(const std::string& run_dir) {
  std::error_code ec;
  fs::path newest;
  for (const auto& e : fs::directory_iterator(run_dir + "/checkpoints", ec)) {
    if (e.is_directory() && e.path().filename().string().rfind("checkpoint_step_", 0) == 0 &&
        (newest.empty() || fs::last_write_time(e.path(), ec) > fs::last_write_time(newest, ec)))
      newest = e.path();
  }
  if (newest.empty()) return kMinFreeBytes;
  int64_t bytes = 0;
  for (const auto& f : fs::recursive_directory_iterator(newest, ec)) {
    std::error_code e2;
    if (f.is_regular_file(e2)) bytes += int64_t(f.file_size(e2));
  }
  return std::max(kMinFreeBytes, bytes + bytes / 4);
}

PreflightReport RunPreflight(const std::string& run_dir) {
  PreflightReport r;
  r.node = ThisNodeName();
  r.checks.push_back(CheckGpu());
  r.checks.push_back(CheckWritable(run_dir, r.node));
  r.checks.push_back(CheckSpace(run_dir));
  if (const char* hook = std::getenv("BATON_PREFLIGHT_FAIL_NODES"); hook != nullptr) {
    const std::string list = std::string(",") + hook + ",";
    if (list.find("," + r.node + ",") != std::string::npos)
      r.checks.push_back({"test_hook", "failed", "BATON_PREFLIGHT_FAIL_NODES names this node"});
  }
  return r;
}

}  // namespace baton
