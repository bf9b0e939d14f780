// StoredZip: the member directory of a zip archive whose members are all stored uncompressed, as
// torch.save writes its files (one `<archive>/data.pkl`, one `<archive>/data/<key>` per storage).
// Every offset and size is checked against the bytes that are there before anything uses it, so a
// hostile archive cannot point a read outside the file. Torch-free; pure (reads the given bytes
// only), so it can be fuzzed on its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schema/status.h"

namespace baton {

struct ZipMember {
  std::string name;
  uint64_t offset = 0;  // the member's first data byte in the archive
  uint64_t size = 0;
};

// The members in central-directory order. Code::kData (message without a path) for anything that
// is not such an archive: no end record, a compressed, encrypted or zip64 member, a member whose
// data lies outside the archive or over the directory, a name that repeats.
Result<std::vector<ZipMember>> ReadStoredZip(std::string_view archive);

}  // namespace baton
