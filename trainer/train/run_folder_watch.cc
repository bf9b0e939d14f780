#include "trainer/train/run_folder_watch.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace baton {

bool RunFolderWatch::Start(const std::string& dir) {
  struct stat st {};
  dir_ = dir;
  watching_ = ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  return watching_;
}

std::string RunFolderWatch::Changed() const {
  if (!watching_) return "";
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) {
    return "the run folder " + dir_ + " is gone (" + std::strerror(errno) +
           "): it was deleted or moved while the run was training";
  }
  if (st.st_dev != dev_ || st.st_ino != ino_ || !S_ISDIR(st.st_mode)) {
    return "the run folder " + dir_ +
           " was replaced while the run was training (another folder now has its name)";
  }
  return "";
}

}  // namespace baton
