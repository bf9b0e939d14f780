// Who may act on a SLURM job: the rule reconcile and the requeue-hold release follow when several
// users' `baton watch` / `baton serve` share one database (docs/team.md, "Several users").
//
// SLURM lets only a job's owner or an operator change it (scontrol update, requeue, release). So
// a sync pass acts only on the jobs of the user it runs as; root, SLURM's SlurmUser and a user who
// says they are an operator (BATON_SLURM_OPERATOR=1: AdminLevel=Operator, which only the
// accounting database knows) act on every job. The job's owner is its UserId in
// `scontrol show job` ("alice(1001)"). Pure functions but CurrentActingUser (reads the process's
// real uid and the environment); thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "orchestrator/slurm/slurm_client.h"

namespace baton {

// Set to 1 by a user SLURM knows as an operator (sacctmgr AdminLevel=Operator or Administrator).
inline constexpr const char* kSlurmOperatorEnv = "BATON_SLURM_OPERATOR";

struct ActingUser {
  int64_t uid = 0;
  std::string name;               // the passwd name, or the uid in digits
  bool acts_on_all_jobs = false;  // root, SlurmUser, or an operator
};

// A user name and uid as SLURM writes them: "alice(1001)". Either part may be missing.
struct SlurmUserId {
  std::string name;
  std::optional<int64_t> uid;
};
SlurmUserId ParseSlurmUserId(const std::string& text);

// The process's real uid and its user name (getpwuid). Root and BATON_SLURM_OPERATOR=1 act on
// every job; `slurm_config` (scontrol show config) adds its SlurmUser.
ActingUser CurrentActingUser(const std::map<std::string, std::string>& slurm_config = {});

// The owner's name of a job; "" when scontrol did not say.
std::string JobOwnerName(const JobInfo& job);

// nullopt when `user` may act on `job`; otherwise the line watch prints:
// "skipped job J of user U: not yours". A job without a UserId is acted on, as before.
std::optional<std::string> NotYours(const ActingUser& user, const JobInfo& job);

}  // namespace baton
