// StaticFiles: the web UI's files for the static routes — embedded in the binary, or read from
// a folder on disk (`baton serve --ui-dir web/`, while developing the UI). The charting library
// under vendor/ always comes from the embedded copy (it lives in node_modules, not web/).
//
// URL paths are checked before any lookup: only [A-Za-z0-9._-] segments, none starting with '.',
// so "..", encoded traversal, hidden files and absolute paths never reach the filesystem; a
// disk path is also re-checked to resolve inside the folder (no symlink escapes).
// Immutable after construction; thread-safe.
#pragma once

#include <string>

#include "schema/status.h"

namespace baton {

struct StaticFile {
  std::string body;
  std::string content_type;
};

class StaticFiles {
 public:
  // `ui_dir` empty: embedded files only.
  explicit StaticFiles(std::string ui_dir) : ui_dir_(std::move(ui_dir)) {}

  // The file for a URL path ("/" means "/index.html"). Code::kNotFound for anything else,
  // Code::kInvalidArgument for a path that fails the check above.
  [[nodiscard]] Result<StaticFile> Find(const std::string& url_path) const;

  // "text/javascript; charset=utf-8" for "app.js", ...; octet-stream when unknown.
  static std::string ContentType(const std::string& path);
  // True when `path` (without the leading '/') passes the check above.
  static bool IsSafePath(const std::string& path);

 private:
  std::string ui_dir_;
};

}  // namespace baton
