#include "orchestrator/http/action_routes.h"

#include <charconv>
#include <regex>

#include "orchestrator/http/api_error.h"
#include "orchestrator/store/record_json.h"

namespace baton {

namespace {

const std::regex& ActionPattern() {
  static const std::regex kPattern(R"(/api/runs/([^/]+)/(cancel|resume))");
  return kPattern;
}

void Send(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(DumpJson(body), "application/json; charset=utf-8");
}

}  // namespace

bool IsActionPath(const std::string& path) { return std::regex_match(path, ActionPattern()); }

void AnswerAction(const RequestIdentity& identity, RunActionService& actions,
                  const httplib::Request& req, httplib::Response& res) {
  std::smatch m;
  if (!std::regex_match(req.path, m, ActionPattern())) {
    return Send(res, 404, ErrorBody(404, "not_found", "no API route " + req.path));
  }
  Result<std::optional<Identity>> who = identity.Identify(req, /*header_only=*/true);
  if (!who.ok()) return Send(res, HttpStatusFor(who.status().code()), ErrorBody(who.status()));
  if (!*who) {
    res.set_header("WWW-Authenticate", "Bearer");
    return Send(res, 401, ErrorBody(401, "unauthorized", identity.Missing()));
  }
  if (identity.options().mode == AuthMode::kProxy &&
      req.get_header_value(kActionHeader) != kActionHeaderValue) {
    return Send(res, 403,
                ErrorBody(403, "forbidden",
                          std::string("a write action needs the header ") + kActionHeader + ": " +
                              kActionHeaderValue + " (so a form on another site cannot send it)"));
  }
  if (!req.params.empty()) {
    return Send(res, 400,
                ErrorBody(400, "bad_request",
                          "POST " + req.path +
                              " takes no query parameters (a token goes in the Authorization "
                              "header, never the URL)"));
  }
  const std::string id_text = m[1];
  int64_t id = 0;
  auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (ec != std::errc() || end != id_text.data() + id_text.size()) {
    return Send(res, 404, ErrorBody(404, "not_found", "no run with id " + id_text));
  }
  const RunAction action = m[2] == "cancel" ? RunAction::kCancel : RunAction::kResume;
  const ActionAnswer answer = actions.Act(**who, id, action);
  Send(res, answer.http_status, answer.body);
}

}  // namespace baton
