// TestStore: the store a test opens for a path. Without BATON_TEST_STORE it is the SQLite file at
// the path, as always. With BATON_TEST_STORE set to a PostgreSQL URI (tests/common/pg_server.sh
// starts a throwaway server for the `pg.` ctest entries), each distinct path gets a fresh
// database of its own on that server, created on first use; the same path gives the same
// database again, so a test that reopens "its file" reopens its database. Test-only.
#pragma once

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "orchestrator/store/store_spec.h"

namespace baton::test {

// True when the tests run against PostgreSQL.
inline bool OnPostgres() {
  const char* uri = std::getenv("BATON_TEST_STORE");
  return uri != nullptr && *uri != '\0';
}

// `uri` with its database name replaced by `name` (postgresql://user@/DB?host=... form).
inline std::string WithDatabase(const std::string& uri, const std::string& name) {
  const size_t slash = uri.find('/', uri.find("://") + 3);
  const size_t end = uri.find('?', slash);
  return uri.substr(0, slash + 1) + name + (end == std::string::npos ? "" : uri.substr(end));
}

inline std::string TestStore(const std::string& path) {
  if (!OnPostgres()) return path;
  static std::map<std::string, std::string> made;
  auto it = made.find(path);
  if (it != made.end()) return it->second;
  const std::string base = std::getenv("BATON_TEST_STORE");
  const std::string name = "t" + std::to_string(std::hash<std::string>{}(path) % 1000000007) + "_" +
                           std::to_string(made.size());
  Result<StoreSpec> spec = ParseStoreSpec(base);
  if (!spec.ok()) std::abort();
  Result<std::unique_ptr<Db>> db = OpenDb(*spec, 10000);
  if (!db.ok() || !(*db)->Exec("CREATE DATABASE " + name).ok()) std::abort();
  return made[path] = WithDatabase(base, name);
}

}  // namespace baton::test
