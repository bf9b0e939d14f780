// Text files compiled into the baton binary at build time (orchestrator/cmake/embed_files.cmake):
// the SQL migrations of schema/sql/ and the batch-script templates of slurm/. Embedding them
// means an installed `baton` never depends on the source tree. Immutable; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace baton {

struct EmbeddedFile {
  const char* name;  // file name without folder, e.g. "001_init.sql"
  const char* text;  // the whole file
};

// schema/sql/NNN_*.sql in name order.
const std::vector<EmbeddedFile>& SqlMigrations();

// slurm/sbatch.sh.in (one element).
const std::vector<EmbeddedFile>& SbatchTemplateFiles();

// slurm/eval_job.sh.in (one element): the batch script of an eval job (eval_job_script.h).
const std::vector<EmbeddedFile>& EvalJobTemplateFiles();

}  // namespace baton
