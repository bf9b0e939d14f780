#include "trainer/memory/snapshot_fit.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace baton {

namespace {

// The "<key>: <n> kB" line of a /proc file, in bytes; -1 when absent.
int64_t ProcKb(const char* file, const std::string& key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream in(line.substr(key.size()));
      int64_t kb = -1;
      in >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  }
  return -1;
}

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
  return buf;
}

}  // namespace

HostMemory ReadHostMemory() {
  return {ProcKb("/proc/meminfo", "MemAvailable:"), ProcKb("/proc/self/status", "VmRSS:")};
}

std::string SnapshotRefusal(int64_t snapshot, const HostMemory& host, int64_t limit) {
  if (limit > 0 && host.resident >= 0 && host.resident + snapshot > limit) {
    return "the snapshot (" + Gib(snapshot) + ") beside the process's " + Gib(host.resident) +
           " would pass slurm.mem_per_task_gb (" + Gib(limit) + ")";
  }
  if (host.available >= 0 && snapshot > host.available / 2) {
    return "the snapshot (" + Gib(snapshot) + ") is more than half of the host's available " +
           Gib(host.available);
  }
  return "";
}

}  // namespace baton
