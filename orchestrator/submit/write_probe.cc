#include "orchestrator/submit/write_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace baton {

namespace {

Status ProbeError(const std::string& folder, const std::string& what, int err) {
  std::string hint = "make it writable, or choose another folder (run.dir)";
  if (err == ENOSPC || err == EDQUOT) hint = "free space there, or choose another folder (run.dir)";
  if (err == EINVAL || err == ENOTSUP) {
    hint = "checkpoints need durable writes: choose a folder on a filesystem that supports fsync";
  }
  return Status::Io(folder + ": the checkpoint write probe could not " + what + ": " +
                    std::strerror(err) + "; " + hint);
}

}  // namespace

Result<double> ProbeWriteRate(const std::string& folder, int64_t bytes) {
  const std::string path = folder + "/.baton-write-probe-" + std::to_string(::getpid());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ProbeError(folder, "create a file", errno);
  // Not zeros: a filesystem that compresses or dedupes would write nothing.
  std::vector<unsigned char> block(size_t(4) << 20);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < block.size(); i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(&block[i], &x, 8);
  }
  const auto start = std::chrono::steady_clock::now();
  Status st;
  for (int64_t done = 0; done < bytes && st.ok();) {
    const size_t n = size_t(std::min<int64_t>(int64_t(block.size()), bytes - done));
    const ssize_t w = ::write(fd, block.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      st = ProbeError(folder, "write", w < 0 ? errno : ENOSPC);
    } else {
      done += w;
    }
  }
  if (st.ok() && ::fsync(fd) != 0) st = ProbeError(folder, "fsync its file", errno);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  ::unlink(path.c_str());
  if (!st.ok()) return st;
  return double(bytes) / 1e9 / std::max(seconds, 1e-6);
}

}  // namespace baton
