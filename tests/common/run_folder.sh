# The run folder's files as the shell tests name them, spelled once here (the binaries' own
# spelling is schema/run_folder.h). Sourced by tests/cli/lib.sh (and so by every trainer test),
# tests/integration/lib.sh and tests/web/cli_show_test.sh.
# shellcheck shell=bash

# events_file RUN_DIR JOB RESTART: the events file of attempt RESTART of job JOB,
# RUN_DIR/events/JOB.RESTART.jsonl (RunFolder::EventsFile). JOB is "local" for a trainer run
# outside SLURM.
events_file() { printf '%s/events/%s.%s.jsonl\n' "$1" "$2" "$3"; }
