"""Training speed with the batch prefetch thread (train.prefetch=2) against without (0).

    python bench/prefetch.py [--steps 60] [--rounds 3] [--d 64] [--preset tiny]

Trains the same short run (the reverse task of the tests, written to a temporary folder)
with train.prefetch=0 and =2, taking turns for --rounds rounds, and prints the median time
per update of each and the ratio prefetch / none (below 1: the prefetch is faster). On a
CPU the thread shares the cores with the training: the figure says whether it costs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from toy_task import write_reverse_pairs

from adl import runtime

ENC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(ffl)) -> norm\n"
DEC = "pos -> repeat(2, res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl)) -> norm\n"


def write_task(folder: Path, n: int = 4000) -> tuple[str, str]:
    write_reverse_pairs(folder, {"train": n}, lengths=(3, 20))
    (folder / "m.enc.adl").write_text(ENC)
    (folder / "m.dec.adl").write_text(DEC)
    return str(folder / "train.src"), str(folder / "train.tgt")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--preset", default="tiny")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train = write_task(folder)
        per_update: dict[int, list[float]] = {0: [], 2: []}
        for r in range(args.rounds):
            for depth in (0, 2) if r % 2 == 0 else (2, 0):
                config = runtime.configure(
                    [str(folder / "m.enc.adl"), str(folder / "m.dec.adl")],
                    preset=args.preset,
                    train=train,
                    sets=[
                        f"d_model={args.d}",
                        f"max_steps={args.steps}",
                        f"prefetch={depth}",
                        "tensorboard=false",
                        f"valid_every={args.steps}",
                        f"log_every={args.steps}",
                    ],
                )
                trainer = runtime.Trainer(config, folder / f"run-{r}-{depth}")
                try:
                    trainer.state.log.setLevel("WARNING")
                    start = time.perf_counter()
                    trainer.run()
                    per_update[depth].append((time.perf_counter() - start) / args.steps)
                finally:
                    trainer.close()
    none, ahead = (statistics.median(per_update[d]) for d in (0, 2))
    print(f"{args.steps} updates, d_model {args.d}, preset {args.preset}, median of {args.rounds}")
    print(f"  no prefetch     {none * 1000:8.1f} ms an update")
    print(f"  prefetch 2      {ahead * 1000:8.1f} ms an update")
    print(f"  ratio prefetch / none = {ahead / none:.3f}")


if __name__ == "__main__":
    main()
