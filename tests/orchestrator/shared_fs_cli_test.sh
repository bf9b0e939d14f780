#!/usr/bin/env bash
# The SQLite store refuses a shared filesystem, on a real FUSE mount (bindfs): `baton ls` with
# BATON_HOME there exits 78 naming the path, FUSE and the PostgreSQL store, and writes no
# database file; BATON_STORE_ALLOW_SHARED_FS=1 opens it with a warning; a symlink into the mount
# is judged where it points; the local temp folder (and tmpfs) is never refused. No SLURM.
# usage: shared_fs_cli_test.sh BATON
# Exit 0 pass; 1 a failed check; 77 bindfs is not installed (scripts/setup.sh installs it).
source "$(dirname "$0")/../cli/lib.sh"
baton=$1
unset BATON_HOME BATON_STORE_ALLOW_SHARED_FS
command -v bindfs >/dev/null || { echo "SKIP: bindfs is not installed (scripts/setup.sh)"; exit 77; }

src=$tmp/src
mnt=$tmp/mnt
mkdir -p "$src" "$mnt"
bindfs "$src" "$mnt" || fail "bindfs $src $mnt failed (is /dev/fuse usable?)"
unmount() { fusermount -u "$mnt" 2>/dev/null || umount "$mnt" 2>/dev/null || true; }
trap 'unmount; rm -rf "$tmp"' EXIT
fstype=$(stat -f -c %t "$mnt")
[ "$fstype" = 65735546 ] || fail "$mnt is not a FUSE mount (statfs type 0x$fstype)"

# no_db_file DIR: SQLite left nothing in DIR (no baton.db, -wal or -shm).
no_db_file() {
  [ -z "$(find "$1" -name 'baton.db*')" ] || fail "a database file was written: $(find "$1" -name 'baton.db*')"
  checks=$((checks + 1))
}

# Refused: 78, the path, the filesystem and the way out named; nothing written.
BATON_HOME=$mnt/home expect_exit 78 "$baton" ls --no-sync
expect_in "$err" "$mnt/home/baton.db"
expect_in "$err" "folder $mnt/home is on FUSE"
expect_in "$err" "PostgreSQL"
expect_in "$err" "BATON_STORE=postgresql://"
expect_in "$err" "BATON_STORE_ALLOW_SHARED_FS=1"
no_db_file "$src"

# A symlink from a local folder into the mount: SQLite's files would land on FUSE.
ln -s "$mnt/home" "$tmp/link"
BATON_HOME=$tmp/link expect_exit 78 "$baton" ls --no-sync
expect_in "$err" "folder $mnt/home is on FUSE"
no_db_file "$src"

# An override that is neither 1 nor 0 is named, not taken as either.
BATON_HOME=$mnt/home BATON_STORE_ALLOW_SHARED_FS=yes expect_exit 78 "$baton" ls --no-sync
expect_in "$err" "BATON_STORE_ALLOW_SHARED_FS='yes' is not 1"
BATON_HOME=$mnt/home BATON_STORE_ALLOW_SHARED_FS=0 expect_exit 78 "$baton" ls --no-sync
no_db_file "$src"

# The override: the store opens (and is created and migrated) with one warning.
BATON_HOME=$mnt/home BATON_STORE_ALLOW_SHARED_FS=1 expect_exit 0 "$baton" ls --no-sync
expect_in "$err" "warning: $mnt/home/baton.db"
expect_in "$err" "is on FUSE"
expect_in "$err" "PostgreSQL"
expect_in "$err" "opening it anyway"
[ -f "$src/home/baton.db" ] || fail "the override did not create the database"
checks=$((checks + 1))
BATON_HOME=$mnt/home BATON_STORE_ALLOW_SHARED_FS=1 expect_exit 0 "$baton" store check
expect_in "$err" "warning:"
# The database that now exists there is refused again without the override (store check too).
BATON_HOME=$mnt/home expect_exit 78 "$baton" ls --no-sync
expect_in "$err" "is on FUSE"
BATON_HOME=$mnt/home expect_exit 78 "$baton" store check
expect_in "$err" "is on FUSE"

# Local filesystems: no refusal and no warning, with or without the override.
check_local() {
  local home=$1
  BATON_HOME=$home expect_exit 0 "$baton" ls --no-sync
  echo "local: $home is $(stat -f -c %T "$home")"
  [ -z "$err" ] || fail "a warning on a local filesystem ($home): $err"
  [ -f "$home/baton.db" ] || fail "no database at $home"
  BATON_HOME=$home BATON_STORE_ALLOW_SHARED_FS=yes expect_exit 0 "$baton" ls --no-sync
  [ -z "$err" ] || fail "a warning on a local filesystem ($home): $err"
}
check_local "$tmp/local/home"
if [ -d /dev/shm ] && [ "$(stat -f -c %t /dev/shm)" = 1021994 ] && shm=$(mktemp -d -p /dev/shm); then
  trap 'unmount; rm -rf "$tmp" "$shm"' EXIT
  check_local "$shm/home"
else
  echo "note: no writable tmpfs at /dev/shm; tmpfs is covered by the unit test's table only"
fi

echo "shared_fs_cli_test: $checks checks passed"
