// The web UI's files (web/*.html|css|js and the charting library from web/package-lock.json),
// compiled into the baton binary at build time by orchestrator/http/embed_web.cmake, so an
// installed `baton serve` never depends on the source tree. Immutable; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace baton {

struct WebAsset {
  const char* path;  // URL path without the leading '/', e.g. "app.js", "vendor/chart.umd.min.js"
  const unsigned char* data;  // the file's bytes
  size_t size;
};

// Every embedded file.
const std::vector<WebAsset>& EmbeddedWebAssets();

}  // namespace baton
