#include "orchestrator/store/attempt_evidence.h"

#include <map>

namespace baton {

std::string SignalName(int number) {
  static const std::map<int, const char*> kNames = {
      {1, "HUP"},   {2, "INT"},   {3, "QUIT"},  {4, "ILL"},   {6, "ABRT"},  {7, "BUS"},
      {8, "FPE"},   {9, "KILL"},  {10, "USR1"}, {11, "SEGV"}, {12, "USR2"}, {13, "PIPE"},
      {14, "ALRM"}, {15, "TERM"}, {24, "XCPU"}, {25, "XFSZ"}};
  auto it = kNames.find(number);
  return it != kNames.end() ? it->second : "signal " + std::to_string(number);
}

std::string AttemptSignal(const AttemptRecord& a) {
  if (a.trainer_signal) return Name(*a.trainer_signal);
  if (a.exit_code && *a.exit_code > 128 && *a.exit_code < 128 + 65) {
    return SignalName(static_cast<int>(*a.exit_code - 128));
  }
  const size_t colon = a.slurm_exit_code.find(':');
  if (colon != std::string::npos) {
    try {
      const int sig = std::stoi(a.slurm_exit_code.substr(colon + 1));
      if (sig > 0) return SignalName(sig);
    } catch (const std::exception&) {
      return "";
    }
  }
  return "";
}

std::optional<std::string> AttemptLogPath(const AttemptRecord& a) {
  const std::string& id = a.job_id;
  if (id.empty() || id.size() > 64 || id[0] == '.') return std::nullopt;
  for (char c : id) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return std::nullopt;
  }
  return "logs/" + id + ".out";
}

}  // namespace baton
