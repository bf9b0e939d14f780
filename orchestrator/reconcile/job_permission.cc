#include "orchestrator/reconcile/job_permission.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace baton {

SlurmUserId ParseSlurmUserId(const std::string& text) {
  SlurmUserId out;
  const size_t open = text.find('(');
  out.name = text.substr(0, open);
  if (open == std::string::npos) return out;
  const size_t close = text.find(')', open);
  const std::string digits =
      text.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
  if (!digits.empty() && digits.size() < 19 &&
      digits.find_first_not_of("0123456789") == std::string::npos) {
    out.uid = std::stoll(digits);
  }
  return out;
}

ActingUser CurrentActingUser(const std::map<std::string, std::string>& slurm_config) {
  ActingUser u;
  const uid_t uid = ::getuid();
  u.uid = static_cast<int64_t>(uid);
  // getpwuid_r: a server's threads may ask at once.
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    u.name = found->pw_name;
  } else {
    u.name = std::to_string(u.uid);
  }
  const char* op = std::getenv(kSlurmOperatorEnv);
  u.acts_on_all_jobs = u.uid == 0 || (op != nullptr && std::string(op) == "1");
  const auto slurm_user = slurm_config.find("SlurmUser");
  if (slurm_user != slurm_config.end()) {
    const SlurmUserId s = ParseSlurmUserId(slurm_user->second);
    if (s.uid ? *s.uid == u.uid : s.name == u.name) u.acts_on_all_jobs = true;
  }
  return u;
}

std::string JobOwnerName(const JobInfo& job) {
  const auto it = job.fields.find("UserId");
  return it == job.fields.end() ? "" : ParseSlurmUserId(it->second).name;
}

std::optional<std::string> NotYours(const ActingUser& user, const JobInfo& job) {
  if (user.acts_on_all_jobs) return std::nullopt;
  const auto it = job.fields.find("UserId");
  if (it == job.fields.end()) return std::nullopt;
  const SlurmUserId owner = ParseSlurmUserId(it->second);
  const bool mine = owner.uid ? *owner.uid == user.uid : owner.name == user.name;
  if (mine) return std::nullopt;
  return "skipped job " + job.job_id + " of user " +
         (owner.name.empty() ? it->second : owner.name) + ": not yours";
}

}  // namespace baton
