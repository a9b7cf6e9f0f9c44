"""Run ``sockeye.train`` (Sockeye 3.1.34, in its own virtualenv) on the benchmark's clock
(``peerclock.py``), outside Sockeye's arithmetic:

- the clock starts at the first update; after every update it is checked, and when the time
  is up the training loop stops at its next check (Sockeye's own ``--max-seconds`` is only
  checked at a checkpoint, so a run would overshoot by up to one checkpoint interval), and
  Sockeye writes its last checkpoint (with its validation) as it does at ``--max-updates``;
- every checkpoint is recorded with its update, seconds and target tokens (each batch's
  target lengths, with eos).

    python sockeye_train.py --peer-stats FILE --peer-minutes M [sockeye-train options]

Imports nothing from ADL.
"""

import sys

from peerclock import Clock, take


def main() -> None:
    args = sys.argv[1:]
    clock = Clock(take(args, "--peer-stats"), float(take(args, "--peer-minutes")))
    sys.argv = [sys.argv[0], *args]

    from sockeye import train, training

    trainer = training.EarlyStoppingTrainer
    step, checkpoint = trainer._step, trainer._create_checkpoint

    def timed_step(self, batch):
        clock.update_started()
        did_update = step(self, batch)
        clock.update_done(int(batch.target_length.sum()), self.state.updates)
        if clock.over():
            self.config.max_updates = self.state.updates  # the loop stops at its next check
        return did_update

    def recorded_checkpoint(self, *a, **k):
        result = checkpoint(self, *a, **k)  # writes params.NNNNN of state.checkpoint
        clock.checkpoint(f"params.{self.state.checkpoint:05d}", self.state.updates)
        return result

    trainer._step = timed_step
    trainer._create_checkpoint = recorded_checkpoint
    clock.run(train.main)


if __name__ == "__main__":
    main()
