#include "trainer/lerobot/stored_zip.h"

#include <set>

namespace baton {
namespace {

constexpr uint32_t kEndSig = 0x06054b50, kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr size_t kEndBytes = 22, kCentralBytes = 46, kLocalBytes = 30;
// torch.save writes a handful of members; a directory beyond this is not one of its files.
constexpr uint64_t kMaxMembers = 1 << 16;

uint64_t Le(std::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | uint8_t(b[at + size_t(k)]);
  return v;
}

}  // namespace

Result<std::vector<ZipMember>> ReadStoredZip(std::string_view z) {
  if (z.size() < kEndBytes) {
    return Status::Data("not a zip archive (" + std::to_string(z.size()) + " bytes)");
  }
  // The end record is the last one whose comment runs exactly to the end of the archive.
  size_t end = std::string_view::npos;
  const size_t lowest = z.size() >= kEndBytes + 0xFFFF ? z.size() - kEndBytes - 0xFFFF : 0;
  for (size_t at = z.size() - kEndBytes + 1; at-- > lowest;) {
    if (Le(z, at, 4) == kEndSig && at + kEndBytes + Le(z, at + 20, 2) == z.size()) {
      end = at;
      break;
    }
  }
  if (end == std::string_view::npos) {
    return Status::Data("not a zip archive (no end-of-directory record; a torch.save file is one)");
  }
  const uint64_t count = Le(z, end + 10, 2), dir_size = Le(z, end + 12, 4),
                 dir_offset = Le(z, end + 16, 4);
  if (Le(z, end + 4, 2) != 0 || Le(z, end + 6, 2) != 0 || Le(z, end + 8, 2) != count) {
    return Status::Data("a multi-disk zip archive");
  }
  if (count == 0xFFFF || dir_size == 0xFFFFFFFF || dir_offset == 0xFFFFFFFF) {
    return Status::Data("a zip64 archive (over 4 GiB or 65535 members; not supported)");
  }
  if (count > kMaxMembers) return Status::Data("zip directory of " + std::to_string(count));
  if (dir_offset > end || dir_size > end - dir_offset) {
    return Status::Data("zip directory [" + std::to_string(dir_offset) + ", +" +
                        std::to_string(dir_size) + ") lies outside the archive");
  }
  std::vector<ZipMember> members;
  std::set<std::string> names;
  uint64_t at = dir_offset;
  const uint64_t dir_end = dir_offset + dir_size;
  for (uint64_t k = 0; k < count; ++k) {
    if (dir_end - at < kCentralBytes || Le(z, at, 4) != kCentralSig) {
      return Status::Data("zip directory entry " + std::to_string(k) + " is cut off or corrupt");
    }
    const uint64_t flags = Le(z, at + 8, 2), method = Le(z, at + 10, 2);
    const uint64_t csize = Le(z, at + 20, 4), usize = Le(z, at + 24, 4);
    const uint64_t name_len = Le(z, at + 28, 2), extra_len = Le(z, at + 30, 2),
                   comment_len = Le(z, at + 32, 2), local = Le(z, at + 42, 4);
    const uint64_t entry = kCentralBytes + name_len + extra_len + comment_len;
    if (dir_end - at < entry) {
      return Status::Data("zip directory entry " + std::to_string(k) + " runs past the directory");
    }
    ZipMember m;
    m.name.assign(z.substr(at + kCentralBytes, name_len));
    const std::string which = "zip member '" + m.name + "'";
    if (flags & 1) return Status::Data(which + " is encrypted");
    if (method != 0) {
      return Status::Data(which + " is compressed (method " + std::to_string(method) +
                          "); torch.save stores members uncompressed");
    }
    if (csize == 0xFFFFFFFF || usize == 0xFFFFFFFF || local == 0xFFFFFFFF) {
      return Status::Data(which + " uses zip64 sizes (not supported)");
    }
    if (csize != usize) return Status::Data(which + ": stored size differs from its size");
    if (local > dir_offset || dir_offset - local < kLocalBytes || Le(z, local, 4) != kLocalSig) {
      return Status::Data(which + ": local header at " + std::to_string(local) +
                          " is missing or outside the archive");
    }
    const uint64_t lname = Le(z, local + 26, 2), lextra = Le(z, local + 28, 2);
    const uint64_t data = local + kLocalBytes + lname + lextra;
    if (data > dir_offset || usize > dir_offset - data) {
      return Status::Data(which + ": data [" + std::to_string(data) + ", +" +
                          std::to_string(usize) + ") runs past the member data");
    }
    if (z.substr(local + kLocalBytes, lname) != m.name) {
      return Status::Data(which + ": the local header names another member");
    }
    if (!names.insert(m.name).second) return Status::Data(which + " appears twice");
    m.offset = data;
    m.size = usize;
    members.push_back(std::move(m));
    at += entry;
  }
  return members;
}

}  // namespace baton
