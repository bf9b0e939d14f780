// `baton token add USER [--admin] [--json]`, `baton token list [--json]`, `baton token revoke
// USER`: the per-user tokens of `baton serve --auth tokens` (store_tokens.h; docs/team.md).
// `add` prints the new token once ({"user": ..., "token": ...} with --json); the store keeps only
// its salted hash, so a lost token is revoked and added again. Whoever can write the database can
// run these: they are the lab admin's commands. A bad user name or a user who already has a token
// is exit 64; revoking a user without one is 66.
#include <iostream>
#include <memory>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/store/store_tokens.h"
#include "schema/clock.h"

namespace baton {

namespace {

struct TokenOptions {
  std::string user;
  bool admin = false;
  bool json = false;
};

int RunTokenAdd(const TokenOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<std::string> token = AddApiToken(**store, o.user, o.admin, UnixTimeNow());
  if (!token.ok()) return ReportError(token.status());
  if (o.json) {
    std::cout << nlohmann::json{{"user", o.user}, {"admin", o.admin}, {"token", *token}}.dump()
              << "\n";
  } else {
    std::cout << "token for " << o.user << (o.admin ? " (admin)" : "")
              << " (shown once; send it as Authorization: Bearer <token>):\n"
              << *token << "\n";
  }
  return 0;
}

int RunTokenList(const TokenOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<std::vector<ApiTokenInfo>> tokens = ListApiTokens(**store);
  if (!tokens.ok()) return ReportError(tokens.status());
  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const ApiTokenInfo& t : *tokens) {
      list.push_back({{"user", t.user}, {"admin", t.admin}, {"created_at", t.created_at}});
    }
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const ApiTokenInfo& t : *tokens) {
    rows.push_back({t.user, t.admin ? "yes" : "no", FormatTime(t.created_at)});
  }
  PrintTable(std::cout, {"USER", "ADMIN", "CREATED"}, rows);
  return 0;
}

int RunTokenRevoke(const TokenOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  if (Status st = RevokeApiToken(**store, o.user); !st.ok()) return ReportError(st);
  if (o.json) {
    std::cout << nlohmann::json{{"user", o.user}, {"revoked", true}}.dump() << "\n";
  } else {
    std::cout << "token of " << o.user << " revoked\n";
  }
  return 0;
}

}  // namespace

void AddTokenCommands(CLI::App& app, int* rc) {
  CLI::App* token = app.add_subcommand("token", "Per-user tokens of `baton serve --auth tokens`");
  token->require_subcommand(1);

  auto add = std::make_shared<TokenOptions>();
  CLI::App* a = token->add_subcommand("add", "Create a user's token and print it once");
  a->add_option("user", add->user, "User name")->required();
  a->add_flag("--admin", add->admin, "May cancel and resume every user's runs");
  a->add_flag("--json", add->json, "Print {\"user\": ..., \"token\": ...}");
  a->callback([add, rc] { *rc = RunTokenAdd(*add); });

  auto list = std::make_shared<TokenOptions>();
  CLI::App* l = token->add_subcommand("list", "The users with a token (no secrets)");
  l->add_flag("--json", list->json, "Print JSON");
  l->callback([list, rc] { *rc = RunTokenList(*list); });

  auto revoke = std::make_shared<TokenOptions>();
  CLI::App* r = token->add_subcommand("revoke", "Delete a user's token");
  r->add_option("user", revoke->user, "User name")->required();
  r->add_flag("--json", revoke->json, "Print JSON");
  r->callback([revoke, rc] { *rc = RunTokenRevoke(*revoke); });
}

}  // namespace baton
