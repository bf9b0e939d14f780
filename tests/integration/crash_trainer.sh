#!/usr/bin/env bash
# A trainer that crashes at start, for failure_policy_test.sh (BATON_TRAIN_BIN=this script).
# BATON_IT_CRASH=exit (default): prints a message and exits 1; =segv: dies of SIGSEGV, as a
# real crash in native code would.
echo "crash_trainer: $* -> crashing (${BATON_IT_CRASH:-exit})" >&2
if [[ ${BATON_IT_CRASH:-exit} == segv ]]; then
  kill -SEGV $$
fi
exit 1
