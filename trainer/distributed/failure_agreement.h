// How the ranks of a run leave together when one of them fails.
//
// A rank that fails alone (a damaged checkpoint file only it reads, a write only it makes) would
// exit with its own code while the others wait in the next collective until their connection
// resets, so the attempt would end as "internal error" on rank 0 and be requeued as a crash. At
// the points where every rank runs local work (loading its part of a checkpoint, writing its part
// of a save) each rank instead captures its outcome, all exchange them in one collective, as they
// agree on the stop flag, and every rank then fails with the same exit code: the failing rank
// with its own message, the others naming that rank and its message. The code chosen is the
// lowest-numbered failing rank's, preferring any class over 70 (internal), since a 70 beside a
// data or config error is most often its echo. The exchange can carry a payload (each rank's
// file hashes for the manifest). Not thread-safe; every rank must reach the same agreements in
// the same order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trainer/fail.h"

namespace baton {

class ProcessGroupHandle;

// A failure every rank has already agreed on: rethrown as is by the next agreement, which then
// exchanges nothing (every rank holds one).
class AgreedFailure : public FatalError {
 public:
  using FatalError::FatalError;
};

// What one rank's part of a collective phase gave: exit code 0 and a payload, or a failure.
struct RankOutcome {
  int code = 0;
  std::string message;  // the failure's full text (with file:line and hint)
  std::string payload;  // on success: what the phase hands to the other ranks
};

// Runs `fn`; a FatalError becomes its code and message, any other exception exit 70. An
// AgreedFailure passes through.
RankOutcome CaptureOutcome(const std::function<std::string()>& fn);

// The code every rank exits with given each rank's code: 0 when all succeeded.
int AgreedExitCode(const std::vector<int>& codes);

// Exchanges `mine` with every rank. When any failed, throws AgreedFailure on every rank (`phase`
// says what was being done); otherwise returns every rank's payload, by rank. On a single rank
// it rethrows the failure unchanged in code and message.
std::vector<std::string> AgreeOnOutcome(ProcessGroupHandle& group, const RankOutcome& mine,
                                        const std::string& phase);

// CaptureOutcome then AgreeOnOutcome; on a single rank `fn` simply runs (its exception as is).
std::vector<std::string> RunAgreed(ProcessGroupHandle& group, const std::string& phase,
                                   const std::function<std::string()>& fn);

}  // namespace baton
