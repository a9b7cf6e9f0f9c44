"""Run ``sockeye.train`` (Sockeye 3.1.34, in its own virtualenv) with two additions the peer
benchmark needs, both outside Sockeye's arithmetic:

- a wall-clock limit checked after every update, like ADL's ``train.max_minutes`` and
  fairseq's ``--stop-time-hours`` (Sockeye's own ``--max-seconds`` is only checked at a
  checkpoint, so a run overshoots by up to one checkpoint interval): when the time is up
  the next loop iteration writes a last checkpoint (with validation) and stops;
- a count of the target tokens it trained on (each batch's target lengths, with eos).

    python sockeye_train.py --peer-stats FILE --peer-minutes M [sockeye-train options]

Runs with the Sockeye virtualenv's python; imports nothing from ADL.
"""

import json
import sys
import time


def main() -> None:
    args = sys.argv[1:]
    stats_file = args[args.index("--peer-stats") + 1]
    minutes = float(args[args.index("--peer-minutes") + 1])
    for flag in ("--peer-stats", "--peer-minutes"):
        i = args.index(flag)
        del args[i : i + 2]
    sys.argv = [sys.argv[0], *args]

    from sockeye import train, training

    seen = {"updates": 0, "tokens": 0, "batches": 0, "checkpoints": {}}
    clock = {"start": None}
    step, checkpoint = (
        training.EarlyStoppingTrainer._step,
        training.EarlyStoppingTrainer._create_checkpoint,
    )

    def counted_step(self, batch):
        if clock["start"] is None:
            clock["start"] = time.monotonic()
        did_update = step(self, batch)
        seen["tokens"] += int(batch.target_length.sum())
        seen["batches"] += 1
        seen["updates"] = self.state.updates
        if time.monotonic() - clock["start"] >= 60 * minutes:
            self.config.max_updates = self.state.updates  # the loop stops at its next check
        return did_update

    def recorded_checkpoint(self, *a, **k):
        result = checkpoint(self, *a, **k)
        seen["checkpoints"][self.state.checkpoint] = self.state.updates
        return result

    training.EarlyStoppingTrainer._step = counted_step
    training.EarlyStoppingTrainer._create_checkpoint = recorded_checkpoint
    try:
        train.main()
    finally:
        seen["train_time"] = time.monotonic() - clock["start"] if clock["start"] else 0.0
        with open(stats_file, "w", encoding="utf-8") as f:
            json.dump(seen, f)


if __name__ == "__main__":
    main()
