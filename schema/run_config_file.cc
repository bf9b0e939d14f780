#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "schema/file_kind.h"
#include "schema/input_file.h"
#include "schema/run_config.h"

namespace baton {

Result<RunConfig> LoadRunConfig(const std::string& path, const RunConfigOptions& options) {
  // Checked before opening: opening a FIFO blocks until a writer comes, and reading a device
  // or a huge file never ends in time.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Config(path + ": cannot read the config file (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Config(path + ": cannot read the config file: it is " + FileKind(st.st_mode) +
                          ", not a regular file");
  }
  auto too_large = [&](int64_t bytes) {
    return Status::Config(path + ": the config file is " + std::to_string(bytes) +
                          " bytes, more than a run config's limit of " +
                          std::to_string(kMaxRunConfigBytes) + " bytes (is it the right file?)");
  };
  if (st.st_size > kMaxRunConfigBytes) return too_large(st.st_size);
  std::string why;
  const int fd = OpenRegularFile(path, &why);
  if (fd < 0) return Status::Config(path + ": cannot read the config file: " + why);
  // One byte past the limit tells a file that grew after the stat from one at the limit.
  std::string text(static_cast<size_t>(kMaxRunConfigBytes) + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      return Status::Config(path + ": cannot read the config file: " + err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got > static_cast<size_t>(kMaxRunConfigBytes)) return too_large(static_cast<int64_t>(got));
  text.resize(got);
  return ParseRunConfig(text, path, options);
}

}  // namespace baton
