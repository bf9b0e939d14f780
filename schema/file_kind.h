// What a path is when it is not a regular file, for messages: inputs (configs, indexes, episode
// and checkpoint files) are refused unopened when they are a FIFO or a device, since opening one
// can block forever and reading one never ends. Pure; thread-safe.
#pragma once

#include <sys/stat.h>

#include <string>

namespace baton {

// "a folder", "a FIFO", "a socket", "a character device", "a block device", else "not a
// regular file".
inline std::string FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace baton
