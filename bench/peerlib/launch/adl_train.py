"""Run ``adl train`` (the command line, in-process) with the benchmark's record of each
checkpoint (``peerclock.py``): its file (step-N.pt), the update, the seconds since the first
update started, and the target tokens trained on. ADL stops itself (``train.max_minutes``,
whose clock starts just before the first update); nothing of its training is changed.

    python adl_train.py --peer-stats FILE [adl train options]
"""

import sys

from peerclock import Clock, take


def main() -> int:
    args = sys.argv[1:]
    clock = Clock(take(args, "--peer-stats"))

    from adl.cli import main as adl
    from adl.runtime.training import policy
    from adl.runtime.training.train import Trainer

    update, checkpoint = Trainer._update, policy.checkpoint

    def timed_update(self, batches):
        clock.update_started()
        result = update(self, batches)
        if result["ok"]:
            clock.update_done(result["tokens"], self.step)
        return result

    def recorded_checkpoint(trainer, validate):
        stop = checkpoint(trainer, validate)
        if validate:  # not on an interruption
            clock.checkpoint(trainer.run_dir.step_file(trainer.step).name, trainer.step)
        return stop

    Trainer._update = timed_update
    policy.checkpoint = recorded_checkpoint  # the loop calls policy.checkpoint(...)
    return clock.run(lambda: adl(["train", *args]))


if __name__ == "__main__":
    sys.exit(main())
