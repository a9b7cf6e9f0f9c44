"""An ensemble against each of its models alone: BLEU, chrF and decoding speed.

    python bench/ensemble.py --model RUN_A RUN_B [RUN_C] --src test.en --ref test.fr
                             [--beam 4] [--threads 1] [--json OUT]

Each model alone, then the ensemble of all (``--ensemble-mode`` linear by default), decode
``--src`` with the same search options; the figures are sacrebleu's BLEU and chrF against
``--ref`` and sentences per second, the ensemble's speed printed as a ratio to the mean of
the single models measured in the same run. With one thread the clock is the process's CPU
time (adl.runtime.cost.timer), so what else the machine runs does not count.

docs/runtime.md ("Ensembles") reports a run of it on the seeds of a sweep's system.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch

import adl
from adl.runtime import cost
from adl.runtime.data.lines import read_lines
from adl.runtime.decode.bleu import score
from adl.runtime.decode.search import SearchOptions


def decode(translator, lines: list[str], options: SearchOptions, clock) -> tuple[list[str], float]:
    started = clock()
    found = translator.search(lines, options)
    return [hyps[0][0] for hyps in found], clock() - started


def run_names(runs: list[str]) -> list[str]:
    """The runs named from the folder above the one they share (``you2020/BASE/seed-1``),
    not by this machine's absolute paths, so that a committed result reads the same anywhere."""
    paths = [Path(r).resolve() for r in runs]
    above = Path(os.path.commonpath(paths)).parent
    return [p.relative_to(above).as_posix() for p in paths]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", nargs="+", required=True, metavar="RUN")
    ap.add_argument("--checkpoint", default="best")
    ap.add_argument("--src", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--ensemble-mode", default="linear", choices=("linear", "log_linear"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    if len(args.model) < 2:
        ap.error("give at least two --model runs")
    torch.set_num_threads(args.threads)
    clock = cost.timer(args.threads, "cpu")
    lines = read_lines(args.src, allow_empty=True)
    refs = read_lines(args.ref, allow_empty=True)
    options = SearchOptions(beam=args.beam, len_a=1.5, len_b=10)
    rows = []
    names = run_names(args.model)
    systems = [(n, [m]) for n, m in zip(names, args.model)] + [("ensemble", list(args.model))]
    for name, paths in systems:
        translator = adl.load_model(paths, args.checkpoint, ensemble_mode=args.ensemble_mode)
        hyps, seconds = decode(translator, lines, options, clock)
        scores = score(hyps, refs, name, args.ref)
        rows.append(
            {
                "system": name,
                "models": len(paths),
                "bleu": round(float(scores["bleu"]), 2),  # type: ignore[arg-type]
                "chrf": round(float(scores["chrf"]), 2),  # type: ignore[arg-type]
                "sentences_per_s": round(len(lines) / seconds, 2),
                "bleu_signature": scores["bleu_signature"],
            }
        )
        print(
            f"{name:<40} BLEU {rows[-1]['bleu']:6.2f}  chrF {rows[-1]['chrf']:6.2f}  "
            f"{rows[-1]['sentences_per_s']:8.2f} sentences/s",
            flush=True,
        )
    singles = rows[:-1]
    mean = lambda key: statistics.mean(float(r[key]) for r in singles)
    ens = rows[-1]
    summary = {
        "bleu_gain": round(float(ens["bleu"]) - mean("bleu"), 2),
        "chrf_gain": round(float(ens["chrf"]) - mean("chrf"), 2),
        "speed_ratio": round(float(ens["sentences_per_s"]) / mean("sentences_per_s"), 3),
    }
    print(
        f"ensemble of {len(singles)} against their mean: BLEU {summary['bleu_gain']:+.2f}, "
        f"chrF {summary['chrf_gain']:+.2f}, speed x{summary['speed_ratio']:.3f}"
    )
    if args.json:
        out = {
            "beam": args.beam,
            "mode": args.ensemble_mode,
            "sentences": len(lines),
            "machine": cost.machine("cpu", args.threads),
            "rows": rows,
            "summary": summary,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
