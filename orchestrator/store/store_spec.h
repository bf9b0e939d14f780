// StoreSpec: which database a store is — what BATON_STORE or `--store` names — and the one
// function that opens either backend's connection. `sqlite:PATH` or a bare path is the SQLite
// file at PATH; `postgresql://…` or `postgres://…` is a libpq URI (passwords only from libpq's
// own places: .pgpass / PGPASSFILE, PGPASSWORD, PGSERVICE — never printed). Anything else that
// names a scheme is refused (Code::kInvalidArgument, exit 64). Pure parsing plus Db::Open.
#pragma once

#include <memory>
#include <string>

#include "orchestrator/store/db.h"
#include "schema/status.h"

namespace baton {

struct StoreSpec {
  Backend backend = Backend::kSqlite;
  std::string target;  // the file's path, or the libpq URI
};

// The spec with any password (user:PASSWORD@ or password=...) replaced by "***": what messages
// and pages show of a store.
std::string ScrubPassword(const std::string& spec);

// Parses `spec` (the forms above). Code::kInvalidArgument naming it when it is none of them.
[[nodiscard]] Result<StoreSpec> ParseStoreSpec(const std::string& spec);

// Connects to `spec` without migrating: a SQLite file is created when missing.
[[nodiscard]] Result<std::unique_ptr<Db>> OpenDb(const StoreSpec& spec, int busy_timeout_ms);

}  // namespace baton
