#include "orchestrator/submit/storage_check.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "orchestrator/slurm/process_runner.h"

namespace baton {

namespace {

constexpr double kQuotaTimeoutS = 10;

// "12345" or "12345*" (over the soft limit) as kB.
bool QuotaNumber(std::string s, int64_t* out) {
  if (!s.empty() && s.back() == '*') s.pop_back();
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *out = std::stoll(s);
  return true;
}

std::string UserName() {
  const struct passwd* pw = ::getpwuid(::geteuid());
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : std::to_string(::geteuid());
}

}  // namespace

std::optional<int64_t> ParseQuotaLeft(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  std::vector<std::string> pending;  // a filesystem name that wrapped onto its own line
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    // A long filesystem name makes both tools print the figures on the next line.
    if (w.size() == 1) {
      pending = w;
      continue;
    }
    if (!pending.empty()) w.insert(w.begin(), pending.begin(), pending.end());
    pending.clear();
    int64_t used = 0, soft = 0, hard = 0;
    if (w.size() < 4 || !QuotaNumber(w[1], &used) || !QuotaNumber(w[2], &soft) ||
        !QuotaNumber(w[3], &hard)) {
      continue;
    }
    int64_t limit = soft > 0 && (hard == 0 || soft < hard) ? soft : hard;
    if (limit == 0) return std::nullopt;
    const int64_t left = limit > used ? limit - used : 0;
    return left > INT64_MAX / 1024 ? INT64_MAX : left * 1024;
  }
  return std::nullopt;
}

std::optional<int64_t> QuotaLeft(const std::string& folder, std::string* source) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> tools = {
      {"lfs quota", {"lfs", "quota", "-q", "-u", UserName(), folder}},
      {"quota", {"quota", "-w", "-p", "-f", folder}},
  };
  for (const auto& [name, argv] : tools) {
    if (FindExecutable(argv[0]).empty()) continue;
    Result<ProcessResult> r = RunProcess(argv, kQuotaTimeoutS);
    if (!r.ok() || r->timed_out || r->exit_code != 0) continue;
    if (std::optional<int64_t> left = ParseQuotaLeft(r->out)) {
      *source = name;
      return left;
    }
  }
  return std::nullopt;
}

std::string StorageShortText(const StorageForecast& f, const std::string& config_path) {
  std::string room =
      ByteText(f.free_bytes) + " (" + std::to_string(f.free_bytes) + " bytes) free in " + f.folder;
  if (f.quota_free_bytes) {
    room += ", " + ByteText(*f.quota_free_bytes) + " (" + std::to_string(*f.quota_free_bytes) +
            " bytes) left of the " + f.quota_source;
  }
  return config_path + ": the run's storage forecast, " + ByteText(f.footprint_bytes) + " (" +
         std::to_string(f.footprint_bytes) + " bytes: " + std::to_string(f.retained) +
         " checkpoint(s) of " + std::to_string(f.checkpoint_bytes) +
         " bytes kept by checkpoint.keep_last / keep_every, plus events and logs), does not fit " +
         room +
         "; lower checkpoint.keep_last or keep_every, free space, or put run.dir on another "
         "filesystem";
}

Result<std::optional<StorageForecast>> CheckStorage(const RunConfig& config,
                                                    const std::string& config_path, bool strict,
                                                    const MemoryPlanReport* plan,
                                                    const std::string& folder,
                                                    std::vector<std::string>* warnings) {
  if (plan == nullptr) {
    warnings->push_back(
        "no storage forecast: baton-train (which plans the checkpoint's size) gave no plan");
    return std::optional<StorageForecast>();
  }
  StorageInputs in;
  in.checkpoint_bytes = plan->checkpoint.disk_bytes;
  in.steps = config.run.steps;
  in.every = config.checkpoint.every;
  in.keep_last = config.checkpoint.keep_last;
  in.keep_every = config.checkpoint.keep_every;
  if (!config.checkpoint.keep_best_metric.empty()) in.keep_best_k = config.checkpoint.keep_best_k;
  in.log_every = config.train.log_every;
  StorageForecast f = ForecastStorage(in);
  f.folder = folder;
  Result<int64_t> free = FreeBytes(folder);
  if (!free.ok()) {
    warnings->push_back("no storage forecast: " + free.status().message());
    return std::optional<StorageForecast>();
  }
  f.free_bytes = *free;
  f.quota_free_bytes = QuotaLeft(folder, &f.quota_source);
  Judge(&f);
  if (!f.fits) {
    if (strict) return Status::Io(StorageShortText(f, config_path));
    warnings->push_back(StorageShortText(f, config_path));
  }
  return std::optional<StorageForecast>(f);
}

}  // namespace baton
