#include "orchestrator/submit/write_probe.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace baton {

namespace {

// Free space the probe leaves untouched beside its own bytes, so it never fills a folder that
// checkpoints (or other users) are about to need. Bytes.
constexpr int64_t kProbeMarginBytes = int64_t(64) << 20;
// Names tried before giving up: another file at a random 64-bit name means someone guesses them.
constexpr int kNameTries = 8;

Status ProbeError(const std::string& folder, const std::string& what, int err) {
  std::string hint = "make it writable, or choose another folder (run.dir)";
  if (err == ENOSPC || err == EDQUOT) hint = "free space there, or choose another folder (run.dir)";
  if (err == EINVAL || err == ENOTSUP) {
    hint = "checkpoints need durable writes: choose a folder on a filesystem that supports fsync";
  }
  return Status::Io(folder + ": the checkpoint write probe could not " + what + ": " +
                    std::strerror(err) + "; " + hint);
}

std::string RandomHex() {
  unsigned char b[8] = {};
  size_t got = 0;
  while (got < sizeof b) {
    const ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n > 0) {
      got += size_t(n);
    } else if (errno != EINTR) {
      // No entropy source: the time and pid are still no name a planted file can count on,
      // since O_EXCL refuses whatever is already there.
      const uint64_t t = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
      const uint64_t x = t ^ (uint64_t(::getpid()) << 40);
      std::memcpy(b, &x, sizeof b);
      break;
    }
  }
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", b[i]);
  return hex;
}

// A new regular file in `folder` that no path names: only the returned descriptor reaches it.
Result<int> OpenUnnamed(const std::string& folder) {
  // O_TMPFILE makes it without a name at all; filesystems without it get a new name, unlinked at
  // once (after checking that the name still is the file this call made).
  const int tmp = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (tmp >= 0) return tmp;
  for (int tries = 0;; ++tries) {
    const std::string path = folder + "/" + kWriteProbePrefix + RandomHex();
    const int fd = ::open(path.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST && tries + 1 < kNameTries) continue;
    if (fd < 0) return ProbeError(folder, "create a file", errno);
    struct stat mine {
    }, named{};
    const bool same = ::fstat(fd, &mine) == 0 && S_ISREG(mine.st_mode) &&
                      ::lstat(path.c_str(), &named) == 0 && named.st_dev == mine.st_dev &&
                      named.st_ino == mine.st_ino;
    const int unlinked = same ? ::unlink(path.c_str()) : -1;
    const int err = same ? errno : EEXIST;
    if (unlinked != 0) {
      ::close(fd);
      return ProbeError(folder, "remove its file " + path + " right after creating it", err);
    }
    return fd;
  }
}

Status CheckRoom(const std::string& folder, int64_t bytes) {
  struct statvfs vfs {};
  if (::statvfs(folder.c_str(), &vfs) != 0) return ProbeError(folder, "read its free space", errno);
  if (vfs.f_blocks == 0) return Status::Ok();  // a filesystem that states no sizes: the write tells
  const double free_bytes = double(vfs.f_bavail) * double(vfs.f_frsize);
  if (free_bytes >= double(bytes) + double(kProbeMarginBytes)) return Status::Ok();
  char buf[200];
  std::snprintf(buf, sizeof buf,
                ": no room for the checkpoint write probe: it writes %.0f MiB and leaves %.0f MiB "
                "free, and the folder has %.1f MiB free",
                double(bytes) / (1 << 20), double(kProbeMarginBytes) / (1 << 20),
                free_bytes / (1 << 20));
  return Status::Io(folder + buf +
                    "; free space there, choose another folder (run.dir), or set "
                    "checkpoint.write_gbps to skip the probe");
}

}  // namespace

Result<double> ProbeWriteRate(const std::string& folder, int64_t bytes) {
  BATON_RETURN_IF_ERROR(CheckRoom(folder, bytes));
  BATON_ASSIGN_OR_RETURN(const int fd, OpenUnnamed(folder));
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
  if (!st.ok()) return st;
  return double(bytes) / 1e9 / std::max(seconds, 1e-6);
}

}  // namespace baton
