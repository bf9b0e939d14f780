// DistEnvFromEnvironment, CpuThreadsPerRank and FirstHostOfNodeList (process_group.h): who this
// rank is, from the environment alone.
#include <algorithm>
#include <cstdlib>
#include <regex>
#include <thread>

#include "schema/exit_codes.h"
#include "trainer/distributed/process_group.h"
#include "trainer/fail.h"

namespace baton {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = Env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0') {
    BATON_FAIL(kExitConfig,
               std::string("environment variable ") + name + "='" + v + "' is not an integer",
               "unset it or give a number");
  }
  return x;
}

// Ports derived from the job id land in [kPortBase, kPortBase + kPortSpan).
constexpr int kPortBase = 20000, kPortSpan = 20000;

}  // namespace

std::string FirstHostOfNodeList(const std::string& nodelist) {
  // "prefix[03-05,07]rest,..." -> "prefix03"; "host1,host2" -> "host1".
  std::smatch m;
  static const std::regex kBracket("^([^,\\[]*)\\[([0-9]+)[^\\]]*\\]([^,]*)");
  if (std::regex_search(nodelist, m, kBracket)) return m[1].str() + m[2].str() + m[3].str();
  return nodelist.substr(0, nodelist.find(','));
}

DistEnv DistEnvFromEnvironment() {
  DistEnv e;
  if (Env("SLURM_PROCID") && Env("SLURM_NTASKS") && Env("SLURM_STEP_ID")) {
    e.rank = EnvInt("SLURM_PROCID", 0);
    e.world_size = EnvInt("SLURM_NTASKS", 1);
    e.local_rank = EnvInt("SLURM_LOCALID", 0);
    if (const char* nodes =
            Env("SLURM_STEP_NODELIST") ? Env("SLURM_STEP_NODELIST") : Env("SLURM_JOB_NODELIST")) {
      e.master_addr = FirstHostOfNodeList(nodes);
    }
    e.port = kPortBase + int(EnvInt("SLURM_JOB_ID", 0) % kPortSpan);
  } else {
    e.rank = EnvInt("RANK", 0);
    e.world_size = EnvInt("WORLD_SIZE", 1);
    e.local_rank = EnvInt("LOCAL_RANK", 0);
  }
  if (const char* a = Env("MASTER_ADDR")) e.master_addr = a;
  e.port = int(EnvInt("MASTER_PORT", e.port));
  if (const char* f = Env("BATON_RDZV_FILE")) e.store_file = f;
  if (const char* t = Env("BATON_COLLECTIVE_TIMEOUT_S")) e.collective_timeout_s = t;
  if (const char* w = Env("BATON_STOP_WAIT_S")) e.stop_wait_s = w;
  if (e.world_size < 1 || e.rank < 0 || e.rank >= e.world_size) {
    BATON_FAIL(
        kExitConfig,
        "rank " + std::to_string(e.rank) + " is outside world size " + std::to_string(e.world_size),
        "check SLURM_PROCID/SLURM_NTASKS or RANK/WORLD_SIZE");
  }
  return e;
}

int CpuThreadsPerRank(const DistEnv& env) {
  const int64_t cpus = EnvInt("SLURM_CPUS_PER_TASK", 0);
  if (cpus > 0) return int(cpus);
  const int64_t hw = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  const int64_t local = EnvInt("SLURM_NTASKS_PER_NODE", EnvInt("LOCAL_WORLD_SIZE", env.world_size));
  return int(std::max<int64_t>(1, hw / std::max<int64_t>(1, local)));
}

}  // namespace baton
