// The batch script of a run, rendered from slurm/sbatch.sh.in (embedded at build time).
//
// Every value that lands in an #SBATCH line is checked against a conservative character set
// (a partition name cannot smuggle in a newline and a second command); paths in the command
// line are shell-quoted. Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>

#include "schema/run_config.h"
#include "schema/status.h"

namespace baton {

struct SbatchParams {
  std::string run_id;  // "12" (or "dry-run")
  std::string run_name;
  std::string run_dir;    // absolute
  std::string baton_bin;  // absolute path of the baton that will run `baton launch`
  std::string grace_s;    // seconds a preemption gives (exported as BATON_GRACE_S), or ""
  std::string exclude;    // "a,b": the node ledger's excluded nodes (--exclude), or ""
};

// Renders `template_text` with `values`: "{{KEY}}" is replaced, lines starting "{{?KEY}}" are
// dropped when values[KEY] is empty. An unknown key is kInternal (a template/code mismatch).
[[nodiscard]] Result<std::string> RenderTemplate(const std::string& template_text,
                                                 const std::map<std::string, std::string>& values);

// The rendered sbatch.sh for a run. kConfig naming the key when a value is not safe.
[[nodiscard]] Result<std::string> RenderSbatchScript(const RunConfig& config,
                                                     const SbatchParams& params);

// `script` (a rendered sbatch.sh or a sweep's array script) with its `#SBATCH --exclude=` line
// set to `exclude` ("a,b"), after its last #SBATCH line, or dropped when `exclude` is "". A job
// resubmitted later (a sweep's resume) then avoids the nodes the ledger excludes now, not those
// of its first submit. kConfig when the host names cannot go into an #SBATCH line.
[[nodiscard]] Result<std::string> WithExcludeLine(const std::string& script,
                                                  const std::string& exclude);

// slurm.mem_per_task_gb as sbatch's --mem-per-cpu value ("1536M"): the task's GiB split over its
// cpus_per_task, in MiB rounded up. "" when the key is 0 (no memory request).
std::string MemPerCpu(const SlurmSection& slurm);

// Whether `value` may go into an #SBATCH line: letters, digits and _-.,:+/[] only.
bool SafeForSbatch(const std::string& value);
// Ok when every value of `values` (keyed by its config key) is SafeForSbatch, else a config
// error naming `source`, the key and the value.
Status CheckSafeForSbatch(const std::string& source,
                          const std::map<std::string, std::string>& values);

// 'text' quoted for bash.
std::string ShellQuote(const std::string& text);

// "My Run #3" -> "my-run-3" (at most 40 characters; "run" when nothing is left).
std::string Slugify(const std::string& name);

}  // namespace baton
