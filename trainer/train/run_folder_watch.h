// RunFolderWatch: the run folder a segment trains into, as it was when the segment started (its
// device and inode). A run folder deleted or replaced under a live run must stop the run with a
// named error: otherwise the next save recreates checkpoints/ in a folder nobody looks at while
// the events go to an unlinked file, and the run's record ends at a step it passed long ago.
// The train loop asks at every step boundary and before every save. Torch-free; one per segment,
// not thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

namespace baton {

class RunFolderWatch {
 public:
  // Records `dir` as it is now. Returns false (and watches nothing) when it cannot be stat'ed.
  bool Start(const std::string& dir);
  // "" while `dir` is the folder Start saw; otherwise why not (gone, or another folder now).
  std::string Changed() const;
  bool watching() const { return watching_; }

 private:
  std::string dir_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool watching_ = false;
};

}  // namespace baton
