#include "trainer/distributed/failure_agreement.h"

#include <nlohmann/json.hpp>

#include "schema/exit_codes.h"
#include "trainer/distributed/process_group.h"

namespace baton {

namespace {

// The first line of a failure's text: what went wrong, without file:line and hint.
std::string Headline(const std::string& message) { return message.substr(0, message.find('\n')); }

}  // namespace

RankOutcome CaptureOutcome(const std::function<std::string()>& fn) {
  RankOutcome o;
  try {
    o.payload = fn();
  } catch (const AgreedFailure&) {
    throw;
  } catch (const FatalError& e) {
    o.code = e.exit_code();
    o.message = e.what();
  } catch (const std::exception& e) {
    o.code = kExitInternal;
    o.message = std::string("internal error: ") + e.what();
  }
  if (o.code == 0) return o;
  o.payload.clear();
  return o;
}

int AgreedExitCode(const std::vector<int>& codes) {
  int internal = 0;
  for (int c : codes) {
    if (c == 0) continue;
    if (c != kExitInternal) return c;
    internal = c;
  }
  return internal;
}

std::vector<std::string> AgreeOnOutcome(ProcessGroupHandle& group, const RankOutcome& mine,
                                        const std::string& phase) {
  if (group.world_size() == 1) {
    if (mine.code != 0) throw AgreedFailure(mine.code, mine.message);
    return {mine.payload};
  }
  const nlohmann::json out{
      {"code", mine.code}, {"message", mine.message}, {"payload", mine.payload}};
  const std::vector<std::string> all = group.AllGatherBytes(out.dump());
  std::vector<int> codes;
  std::vector<std::string> messages, payloads;
  for (const auto& text : all) {
    const auto j = nlohmann::json::parse(text);
    codes.push_back(j.at("code").get<int>());
    messages.push_back(j.at("message").get<std::string>());
    payloads.push_back(j.at("payload").get<std::string>());
  }
  const int agreed = AgreedExitCode(codes);
  if (agreed == 0) return payloads;
  const int64_t me = group.rank();
  if (mine.code != 0) throw AgreedFailure(agreed, mine.message);
  size_t who = 0;
  while (who < codes.size() && codes[who] != agreed) ++who;
  throw AgreedFailure(agreed,
                      "rank " + std::to_string(who) + " of " + std::to_string(group.world_size()) +
                          " failed " + phase + " (exit " + std::to_string(agreed) +
                          "): " + Headline(messages[who]) + "\n  hint: rank " + std::to_string(me) +
                          " stops with the same exit code; the failing rank's log has "
                          "the details");
}

std::vector<std::string> RunAgreed(ProcessGroupHandle& group, const std::string& phase,
                                   const std::function<std::string()>& fn) {
  if (group.world_size() == 1) return {fn()};
  return AgreeOnOutcome(group, CaptureOutcome(fn), phase);
}

}  // namespace baton
