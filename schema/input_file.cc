#include "schema/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schema/file_kind.h"

namespace baton {
namespace {

Status NotRegular(const std::string& path, mode_t mode) {
  return Status::Data(path + ": it is " + FileKind(mode) + ", not a regular file");
}

}  // namespace

Status CheckRegularFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::NotFound(path + ": no such file");
    return Status::Io(path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  return Status::Ok();
}

Result<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes) {
  BATON_RETURN_IF_ERROR(CheckRegularFile(path));
  // O_NONBLOCK: a FIFO swapped in after the stat must not block the open either.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Io(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::Io(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotRegular(path, st.st_mode);
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return Status::Data(path + ": " + std::to_string(size) + " bytes, more than the " +
                        std::to_string(max_bytes) + " such a file may hold");
  }
  std::string data(size_t(size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, &data[got], data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::Io(path + ": read failed: " + std::strerror(err));
    }
    if (n == 0) break;  // shrank since the stat: what is there
    got += size_t(n);
  }
  ::close(fd);
  data.resize(got);
  return data;
}

int OpenRegularFile(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *why = "it is " + FileKind(st.st_mode) + ", not a regular file";
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

}  // namespace baton
