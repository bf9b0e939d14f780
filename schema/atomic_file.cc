#include "schema/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace baton {
namespace fs = std::filesystem;

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Status::Io(dir + ": cannot open folder to fsync: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return Status::Io(dir + ": fsync failed: " + std::strerror(err));
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, const std::function<Status(std::FILE*)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::Io(tmp + ": cannot create: " + std::strerror(errno));
  Status st = write(f);
  if (st.ok() && (std::fflush(f) != 0 || std::ferror(f))) {
    st = Status::Io(tmp + ": write failed: " + std::strerror(errno));
  }
  if (st.ok() && ::fsync(::fileno(f)) != 0) {
    st = Status::Io(tmp + ": fsync failed: " + std::strerror(errno));
  }
  if (std::fclose(f) != 0 && st.ok()) {
    st = Status::Io(tmp + ": close failed: " + std::strerror(errno));
  }
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Io(path + ": rename from " + tmp + " failed: " + err);
  }
  return FsyncDir(fs::path(path).parent_path().string());
}

Status WriteTextAtomic(const std::string& path, const std::string& text) {
  return WriteFileAtomic(path, [&](std::FILE* f) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
      return Status::Io(path + ": short write: " + std::strerror(errno));
    }
    return Status::Ok();
  });
}

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io(path + ": cannot open: " + std::strerror(errno));
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::Io(path + ": read failed");
  return buf.str();
}

}  // namespace baton
