// SharedFs: the SQLite store refuses a folder on a shared (network or cluster) filesystem.
//
// SQLite's locks and its WAL index (a shared-memory file, mmap'ed by every connection) are only
// safe when every process that opens the database runs on one host with a local filesystem; on
// NFS, Lustre, GPFS, SMB, Ceph or a FUSE mount they give lock errors or a corrupt database once
// two login nodes write. A lab's shared history belongs in PostgreSQL (docs/store.md).
//
// The filesystem is named by statfs(2)'s f_type (the kernel's superblock magic), judged by one
// table (kFilesystemKinds in shared_fs.cc) and one pure function, ClassifyFilesystem(). A magic
// the table does not list is taken as local: the table names what is known to be shared, and a
// new local filesystem must not stop every command. FUSE is refused as a whole: statfs cannot
// tell sshfs or s3fs from a local FUSE filesystem.
//
// BATON_STORE_ALLOW_SHARED_FS=1 lets the store open there anyway, with a warning on stderr
// (once per process and folder): a user who knows only one host ever opens it.
// Thread-safe (the once-per-folder warning is guarded by a mutex).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "schema/status.h"

namespace baton {

// The environment variable that lets a SQLite store open on a shared filesystem ("1").
inline constexpr const char* kAllowSharedFsEnv = "BATON_STORE_ALLOW_SHARED_FS";

// One filesystem statfs can report: its f_type magic, the name users know it by, and whether
// SQLite must not be used on it.
struct FilesystemKind {
  uint32_t magic;
  const char* name;
  bool shared;
};

// What the table says of a magic; nullopt for one it does not list (taken as local).
std::optional<FilesystemKind> ClassifyFilesystem(uint32_t magic);

// What opening a SQLite store on a filesystem comes to.
enum class SharedFsVerdict {
  kOpen,    // a local (or unknown) filesystem
  kWarn,    // shared, and BATON_STORE_ALLOW_SHARED_FS=1: open with a warning
  kRefuse,  // shared: exit 78
};

// Pure: the verdict for a filesystem magic and whether the override is on.
SharedFsVerdict JudgeStoreFilesystem(uint32_t magic, bool allow_shared);

// What the refusal and the warning both say: the database path, the folder checked, the
// filesystem found, and the way out (a PostgreSQL store). The refusal adds the override.
std::string SharedFsMessage(const std::string& db_path, const std::string& folder,
                            const FilesystemKind& kind);

// The check Store::Open runs for a SQLite file (not ":memory:") once its folder exists: statfs
// of the folder the database lives in (symlinks resolved, as SQLite resolves them, so its -wal
// and -shm files are judged where they will be). Code::kConfig (exit 78) on a shared
// filesystem without the override, or with an override that is not "1", "0" or empty (read
// only there: elsewhere it changes nothing); Code::kIo when the folder cannot be examined. With
// the override, writes the warning to `warn` (once per folder and process) and returns Ok.
// The one-argument form reads the override from the environment and warns on std::cerr.
Status CheckSqliteStoreFilesystem(const std::string& db_path);
Status CheckSqliteStoreFilesystem(const std::string& db_path, const char* allow_value,
                                  std::ostream& warn);

}  // namespace baton
