#include "orchestrator/store/shared_fs.h"

#include <sys/vfs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>

namespace fs = std::filesystem;

namespace baton {

namespace {

// statfs(2) f_type magics (linux/magic.h, and the out-of-tree clients' own headers for Lustre,
// GPFS and BeeGFS). Shared: more than one host can open the same file, or (FUSE, 9p) the
// locks and shared memory SQLite needs are not guaranteed. The local rows are listed so that a
// message or a test can name them; a magic that is not here is treated as local too.
constexpr FilesystemKind kFilesystemKinds[] = {
    {0x00006969, "NFS", true},      {0x0000517B, "SMB", true},    {0xFF534D42, "CIFS", true},
    {0xFE534D42, "SMB2", true},     {0x0BD00BD0, "Lustre", true}, {0x47504653, "GPFS", true},
    {0x65735546, "FUSE", true},     {0x00C36400, "Ceph", true},   {0x19830326, "BeeGFS", true},
    {0x01161970, "GFS2", true},     {0x7461636F, "OCFS2", true},  {0x5346414F, "AFS", true},
    {0x6B414653, "AFS", true},  // kAFS, the kernel's own AFS client
    {0x73757245, "Coda", true},     {0x0000564C, "NCP", true},    {0x01021997, "9p", true},
    {0x0000EF53, "ext4", false},  // ext2 and ext3 report the same magic
    {0x58465342, "xfs", false},     {0x9123683E, "btrfs", false}, {0x01021994, "tmpfs", false},
    {0x794C7630, "overlay", false}, {0xF2F52010, "f2fs", false},  {0x2FC12FC1, "zfs", false},
    {0x858458F6, "ramfs", false},
};

std::string Hex(uint32_t magic) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", magic);
  return buf;
}

// The folder SQLite's files will live in: symlinks resolved as far as the path exists.
std::string StoreFolder(const std::string& db_path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(db_path, ec), ec);
  if (ec || p.empty()) p = fs::absolute(db_path, ec);
  const fs::path parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

// Warns once per folder and process: a server opens many connections to one store.
bool FirstWarningFor(const std::string& folder) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  return warned.insert(folder).second;
}

}  // namespace

std::optional<FilesystemKind> ClassifyFilesystem(uint32_t magic) {
  for (const FilesystemKind& k : kFilesystemKinds) {
    if (k.magic == magic) return k;
  }
  return std::nullopt;
}

SharedFsVerdict JudgeStoreFilesystem(uint32_t magic, bool allow_shared) {
  const std::optional<FilesystemKind> kind = ClassifyFilesystem(magic);
  if (!kind || !kind->shared) return SharedFsVerdict::kOpen;
  return allow_shared ? SharedFsVerdict::kWarn : SharedFsVerdict::kRefuse;
}

std::string SharedFsMessage(const std::string& db_path, const std::string& folder,
                            const FilesystemKind& kind) {
  return db_path + ": the SQLite store's folder " + folder + " is on " + kind.name +
         " (statfs magic " + Hex(kind.magic) +
         "), a shared filesystem where SQLite's locks and WAL are not safe (lock errors, a "
         "corrupt database once two hosts write); use a PostgreSQL store for a history on a "
         "shared filesystem (BATON_STORE=postgresql://... or --store postgresql://..., see "
         "docs/store.md)";
}

Status CheckSqliteStoreFilesystem(const std::string& db_path) {
  return CheckSqliteStoreFilesystem(db_path, std::getenv(kAllowSharedFsEnv), std::cerr);
}

Status CheckSqliteStoreFilesystem(const std::string& db_path, const char* allow_value,
                                  std::ostream& warn) {
  const std::string folder = StoreFolder(db_path);
  struct statfs st {};
  if (::statfs(folder.c_str(), &st) != 0) {
    return Status::Io(folder + ": cannot tell which filesystem the store's folder is on: " +
                      std::strerror(errno));
  }
  // f_type is a signed word; the magics are 32-bit (CIFS's would be negative on 32-bit hosts).
  const uint32_t magic = static_cast<uint32_t>(st.f_type);
  const std::optional<FilesystemKind> kind = ClassifyFilesystem(magic);
  if (!kind || !kind->shared) return Status::Ok();
  const std::string allow = allow_value != nullptr ? allow_value : "";
  if (allow != "" && allow != "0" && allow != "1") {
    return Status::Config(std::string(kAllowSharedFsEnv) + "='" + allow +
                          "' is not 1 (allow a SQLite store on a shared filesystem) or 0; " +
                          SharedFsMessage(db_path, folder, *kind));
  }
  switch (JudgeStoreFilesystem(magic, allow == "1")) {
    case SharedFsVerdict::kOpen:
      return Status::Ok();
    case SharedFsVerdict::kWarn:
      if (FirstWarningFor(folder)) {
        warn << "warning: " << SharedFsMessage(db_path, folder, *kind) << "; opening it anyway ("
             << kAllowSharedFsEnv << "=1): only one host may ever open it" << std::endl;
      }
      return Status::Ok();
    case SharedFsVerdict::kRefuse:
      break;
  }
  return Status::Config(SharedFsMessage(db_path, folder, *kind) + ", or set " + kAllowSharedFsEnv +
                        "=1 if only one host ever opens it");
}

}  // namespace baton
