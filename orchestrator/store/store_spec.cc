#include "orchestrator/store/store_spec.h"

#include <cctype>
#include <regex>

#include "orchestrator/store/pg_db.h"
#include "orchestrator/store/sqlite_db.h"

namespace baton {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// "scheme:" at the front (RFC 3986 letters), or "" when there is none.
std::string SchemeOf(const std::string& spec) {
  if (spec.empty() || !std::isalpha(static_cast<unsigned char>(spec[0]))) return "";
  size_t i = 1;
  while (i < spec.size() && (std::isalnum(static_cast<unsigned char>(spec[i])) || spec[i] == '+' ||
                             spec[i] == '.' || spec[i] == '-')) {
    ++i;
  }
  return i < spec.size() && spec[i] == ':' ? spec.substr(0, i) : "";
}

}  // namespace

std::string ScrubPassword(const std::string& uri) {
  static const std::regex kUserInfo(R"(^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?]*):[^@/?]*@)");
  static const std::regex kParam(R"(([?&]password=)[^&]*)");
  std::string out = std::regex_replace(uri, kUserInfo, "$1:***@");
  return std::regex_replace(out, kParam, "$1***");
}

Result<StoreSpec> ParseStoreSpec(const std::string& spec) {
  if (spec.empty()) return Status::InvalidArgument("store: empty (BATON_STORE or --store)");
  if (StartsWith(spec, "postgresql://") || StartsWith(spec, "postgres://")) {
    return StoreSpec{Backend::kPostgres, spec};
  }
  if (StartsWith(spec, "sqlite:")) {
    std::string path = spec.substr(7);
    if (StartsWith(path, "//")) path = path.substr(2);  // sqlite:///abs/path
    if (path.empty()) return Status::InvalidArgument("store " + spec + ": no file after sqlite:");
    return StoreSpec{Backend::kSqlite, path};
  }
  const std::string scheme = SchemeOf(spec);
  if (!scheme.empty()) {
    return Status::InvalidArgument("store " + ScrubPassword(spec) + ": unknown scheme '" + scheme +
                                   ":' (use sqlite:PATH, postgresql://... or postgres://...)");
  }
  return StoreSpec{Backend::kSqlite, spec};
}

Result<std::unique_ptr<Db>> OpenDb(const StoreSpec& spec, int busy_timeout_ms) {
  if (spec.backend == Backend::kPostgres) {
    BATON_ASSIGN_OR_RETURN(std::unique_ptr<PgDb> db, PgDb::Open(spec.target, busy_timeout_ms));
    return std::unique_ptr<Db>(std::move(db));
  }
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db,
                         SqliteDb::Open(spec.target, busy_timeout_ms));
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace baton
