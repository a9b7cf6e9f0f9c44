"""Run ``fairseq-train`` (fairseq 0.12.3, in its own virtualenv) on the benchmark's clock
(``peerclock.py``), outside fairseq's arithmetic:

- the clock starts at the first update: fairseq's ``--stop-time-hours`` is checked after
  every update against ``Trainer.cumulative_training_time``, which counts from the trainer's
  creation (before the data is loaded); here it counts from the first update's start, as
  for every system;
- every checkpoint is recorded with its update, seconds and target tokens (each sample's
  ``ntokens``, the target tokens with eos). fairseq names a checkpoint of
  ``--save-interval-updates`` ``checkpoint_E_U.pt``, but writes the one of the stop (and
  one at an epoch's end) only as ``checkpoint_last.pt``: that one is copied to its
  ``checkpoint_E_U.pt`` name, so that every checkpoint can be averaged and validated.

    python fairseq_train.py --peer-stats FILE [fairseq-train options]

Imports nothing from ADL.
"""

import os
import shutil
import sys

from peerclock import Clock, take


def main() -> None:
    args = sys.argv[1:]
    clock = Clock(take(args, "--peer-stats"))
    sys.argv = [sys.argv[0], *args]

    from fairseq import checkpoint_utils
    from fairseq.trainer import Trainer
    from fairseq_cli import train

    step, save = Trainer.train_step, checkpoint_utils.save_checkpoint

    def timed_step(self, samples, raise_oom=False):
        clock.update_started()
        output = step(self, samples, raise_oom)
        tokens = sum(int(s["ntokens"]) for s in samples if s and "ntokens" in s)
        clock.update_done(tokens, self.get_num_updates())
        return output

    def recorded_save(cfg, trainer, epoch_itr, val_loss):
        save(cfg, trainer, epoch_itr, val_loss)
        updates = trainer.get_num_updates()
        name = f"checkpoint_{epoch_itr.epoch}_{updates}.pt"
        path = os.path.join(cfg.save_dir, name)
        if not os.path.exists(path):
            shutil.copyfile(os.path.join(cfg.save_dir, "checkpoint_last.pt"), path)
        clock.checkpoint(name, updates)

    Trainer.train_step = timed_step
    Trainer.cumulative_training_time = lambda self: clock.elapsed()
    checkpoint_utils.save_checkpoint = recorded_save
    clock.run(train.cli_main)


if __name__ == "__main__":
    main()
