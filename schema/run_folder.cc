#include "schema/run_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "schema/checkpoint_manifest.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

std::string Join(const std::string& root, const std::string& rel) {
  return (fs::path(root) / rel).string();
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// SLURM job ids are numbers (compared by value); anything else sorts after them, by name.
bool JobIdLess(const std::string& a, const std::string& b) {
  const bool na = AllDigits(a), nb = AllDigits(b);
  if (na != nb) return na;
  if (na && a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace

std::string RunFolder::RunYaml() const { return Join(root, "run.yaml"); }
std::string RunFolder::SbatchScript() const { return Join(root, "sbatch.sh"); }
std::string RunFolder::LogsDir() const { return Join(root, "logs"); }
std::string RunFolder::LogFile(const std::string& job_id) const {
  return Join(LogsDir(), job_id + ".out");
}
std::string RunFolder::EventsDir() const { return Join(root, "events"); }
std::string RunFolder::EventsFile(const std::string& job_id, int64_t restart_count,
                                  int64_t in_job_seq) const {
  return Join(EventsDir(), EventsFileName(job_id, restart_count, in_job_seq));
}
std::string RunFolder::CheckpointsDir() const { return Join(root, "checkpoints"); }
std::string RunFolder::CheckpointDir(int64_t step) const {
  return Join(CheckpointsDir(), kCheckpointPrefix + std::to_string(step));
}

std::string RunFolder::CancelMark() const { return Join(root, "CANCELLED"); }
std::string RunFolder::EvalsDir() const { return Join(root, "evals"); }
std::string RunFolder::EvalFile(int64_t step) const {
  return Join(EvalsDir(), "step_" + std::to_string(step) + ".json");
}
std::string RunFolder::HeartbeatDir() const { return Join(root, "heartbeat"); }
std::string RunFolder::HeartbeatFile(int64_t rank) const {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05lld", (long long)rank);
  return Join(HeartbeatDir(), name);
}

std::string EventsFileName(const std::string& job_id, int64_t restart_count, int64_t in_job_seq) {
  return job_id + "." + std::to_string(restart_count) +
         (in_job_seq > 0 ? "." + std::to_string(in_job_seq) : "") + ".jsonl";
}

bool ParseEventsFileName(const std::string& file_name, std::string* job_id, int64_t* restart,
                         int64_t* in_job_seq) {
  const std::string ext = ".jsonl";
  if (file_name.size() <= ext.size() ||
      file_name.compare(file_name.size() - ext.size(), ext.size(), ext) != 0) {
    return false;
  }
  const std::string stem = file_name.substr(0, file_name.size() - ext.size());
  const size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  const std::string r = stem.substr(dot + 1);
  if (!AllDigits(r) || r.size() > 9) return false;
  std::string job = stem.substr(0, dot);
  int64_t seq = 0, count = std::stoll(r);
  // "<job>.<restart>.<seq>": the part before the last dot ends in ".<digits>" itself.
  const size_t dot2 = job.rfind('.');
  if (dot2 != std::string::npos && dot2 > 0) {
    const std::string r2 = job.substr(dot2 + 1);
    if (!AllDigits(r2) || r2.size() > 9) return false;
    seq = count;
    count = std::stoll(r2);
    job = job.substr(0, dot2);
    if (seq == 0) return false;  // seq 0 is the plain name
  }
  *job_id = job;
  *restart = count;
  if (in_job_seq != nullptr) *in_job_seq = seq;
  return true;
}

std::vector<std::string> RunFolder::ListEventFiles() const {
  struct Entry {
    std::string path, job;
    int64_t restart, seq;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  const fs::path dir = fs::absolute(EventsDir(), ec);
  if (ec || !fs::is_directory(dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    Entry x;
    if (!ParseEventsFileName(e.path().filename().string(), &x.job, &x.restart, &x.seq)) continue;
    x.path = e.path().string();
    entries.push_back(std::move(x));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.job != b.job) return JobIdLess(a.job, b.job);
    if (a.restart != b.restart) return a.restart < b.restart;
    return a.seq < b.seq;
  });
  std::vector<std::string> out;
  for (auto& e : entries) out.push_back(std::move(e.path));
  return out;
}

}  // namespace baton
