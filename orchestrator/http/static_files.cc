#include "orchestrator/http/static_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "orchestrator/http/web_assets.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<StaticFile> FromEmbedded(const std::string& path) {
  const std::vector<WebAsset>& assets = EmbeddedWebAssets();
  // A handful of files: a linear scan is simpler than keeping the table sorted.
  auto it =
      std::find_if(assets.begin(), assets.end(), [&](const WebAsset& a) { return path == a.path; });
  if (it == assets.end()) return Status::NotFound("no such file: /" + path);
  return StaticFile{std::string(reinterpret_cast<const char*>(it->data), it->size),
                    StaticFiles::ContentType(path)};
}

}  // namespace

bool StaticFiles::IsSafePath(const std::string& path) {
  if (path.empty() || path.size() > 256) return false;
  bool segment_start = true;
  for (char ch : path) {
    if (ch == '/') {
      if (segment_start) return false;  // "//" or a leading '/'
      segment_start = true;
      continue;
    }
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!ok) return false;
    if (segment_start && ch == '.') return false;  // "..", ".git", hidden files
    segment_start = false;
  }
  return !segment_start;
}

std::string StaticFiles::ContentType(const std::string& path) {
  if (EndsWith(path, ".html")) return "text/html; charset=utf-8";
  if (EndsWith(path, ".js")) return "text/javascript; charset=utf-8";
  if (EndsWith(path, ".css")) return "text/css; charset=utf-8";
  if (EndsWith(path, ".svg")) return "image/svg+xml";
  if (EndsWith(path, ".png")) return "image/png";
  if (EndsWith(path, ".json")) return "application/json";
  return "application/octet-stream";
}

Result<StaticFile> StaticFiles::Find(const std::string& url_path) const {
  std::string path = url_path;
  if (!path.empty() && path[0] == '/') path.erase(0, 1);
  if (path.empty()) path = "index.html";
  if (!IsSafePath(path)) return Status::InvalidArgument("bad file path: " + url_path);
  if (ui_dir_.empty() || path.rfind("vendor/", 0) == 0) return FromEmbedded(path);

  std::error_code ec;
  const fs::path root = fs::canonical(ui_dir_, ec);
  if (ec) return Status::NotFound("--ui-dir " + ui_dir_ + " is not readable: " + ec.message());
  const fs::path file = fs::weakly_canonical(root / path, ec);
  const std::string root_s = root.string() + "/";
  if (ec || file.string().compare(0, root_s.size(), root_s) != 0) {
    return Status::NotFound("no such file: /" + path);
  }
  if (!fs::is_regular_file(file, ec)) return Status::NotFound("no such file: /" + path);
  std::ifstream in(file, std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  if (!in && !in.eof()) return Status::Io("cannot read " + file.string());
  return StaticFile{body.str(), ContentType(path)};
}

}  // namespace baton
