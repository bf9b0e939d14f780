"""The keep-best retention rule (docs/eval.md, "Retention"), written here independently of the
trainer's, for the tests that check what a run left on disk (tests/trainer/keep_best_test.sh,
tests/integration/keep_best_requeues_test.sh). Imported by their inline python."""
import glob
import os


def rule_set(saves, value, is_target, keep_last, keep_every, k):
    """The checkpoints the rule keeps of `saves` (steps, oldest first) given `value` (eval loss by
    step, the results known at the prune): the newest keep_last, the keep_every multiples, every
    eval target without a result, and the k lowest values (ties to the lower step)."""
    saves = sorted(saves)
    want = set(saves[-keep_last:]) | {s for s in saves if s % keep_every == 0}
    want |= {s for s in saves if is_target(s) and s not in value}
    for s, v in value.items():  # beaten by fewer than k evaluated saves
        if sum(1 for u, w in value.items() if w < v or (w == v and u < s)) < k:
            want.add(s)
    return want


def on_disk(run_dir):
    """The steps of the run's checkpoint folders (partial ones left out)."""
    return {int(os.path.basename(p).split("_")[-1])
            for p in glob.glob(run_dir + "/checkpoints/checkpoint_step_*")
            if not p.endswith(".partial")}
