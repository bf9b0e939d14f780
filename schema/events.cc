#include "schema/events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "schema/clock.h"

namespace baton {

EventWriter::~EventWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status EventWriter::Open(const std::string& path, const std::string& source) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Status::Io(path + ": cannot create the events folder: " + ec.message());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Io(path + ": cannot open for appending: " + std::strerror(errno));
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  path_ = path;
  source_ = source;
  return Status::Ok();
}

Status EventWriter::Write(const char* type, nlohmann::json record, bool sync) {
  if (fd_ < 0) return Status::Internal("events: write before open");
  record["type"] = type;
  record["time"] = UnixTimeNow();
  record["source"] = source_;
  const std::string line = record.dump() + "\n";
  // One write() per line: with O_APPEND the line lands whole at the end of the file.
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return Status::Io(path_ + ": short event write: " + std::strerror(errno));
  }
  if (sync && ::fsync(fd_) != 0)
    return Status::Io(path_ + ": fsync failed: " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace baton
