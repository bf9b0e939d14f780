#include "schema/dataset_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "schema/file_kind.h"
#include "schema/input_file.h"

namespace baton {
namespace fs = std::filesystem;

std::string DatasetInfoPath(const std::string& dir) {
  return (fs::path(dir) / "meta" / "info.json").string();
}

std::optional<std::string> LeRobotCodebaseVersion(const nlohmann::json& info) {
  if (!info.is_object()) return std::nullopt;
  const auto it = info.find("codebase_version");
  if (it == info.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::string> LeRobotFolderVersion(const std::string& dir) {
  const Result<std::string> text = ReadRegularFile(DatasetInfoPath(dir), kMaxDatasetInfoBytes);
  if (!text.ok()) return std::nullopt;
  const nlohmann::json info = nlohmann::json::parse(text.value(), /*cb=*/nullptr,
                                                    /*allow_exceptions=*/false);
  if (info.is_discarded()) return std::nullopt;
  return LeRobotCodebaseVersion(info);
}

Result<int64_t> CountEpisodes(const std::string& index_path, int64_t enough) {
  struct stat st {};
  if (::stat(index_path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return int64_t{-1};
    return Status::Config(index_path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Config(index_path + " is " + FileKind(st.st_mode) + ", not a regular file");
  }
  std::string why;
  const int fd = OpenRegularFile(index_path, &why);
  if (fd < 0) return Status::Config(index_path + ": cannot read: " + why);
  int64_t count = 0;
  bool content = false;  // the current line holds a non-blank character
  char buf[1 << 16];
  while (count < enough) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char ch = buf[i];
      if (ch == '\n') {
        count += content ? 1 : 0;
        content = false;
      } else if (ch != ' ' && ch != '\t' && ch != '\r') {
        content = true;
      }
    }
  }
  ::close(fd);
  return count + (content ? 1 : 0);
}

}  // namespace baton
