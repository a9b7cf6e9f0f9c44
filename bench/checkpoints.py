"""How much the choice of checkpoint moves a test score: every checkpoint ADL runs kept,
decoded greedy and with each beam, scored with sacrebleu.

    python bench/checkpoints.py RUN [RUN ...] --src TEST.src --ref TEST.ref
                                [--beams 1,4,8] [--json OUT]

For each run folder (of ``adl train``, or the ``run`` folder of a bench/peers.py ADL job):
each file of RUN/checkpoints (best.pt, last.pt and the kept step-N.pt), translated with
``adl.load_model(RUN, checkpoint=FILE)`` and the default search options but the beam
(length limit 1.5 x source + 10, length penalty length^1). Printed: BLEU (and chrF) of each
checkpoint and beam; for each run, the spread of greedy BLEU over its step checkpoints
and, for each beam, the beam's BLEU minus greedy's over them (mean, least, most). A reader
sees whether a difference between two searches, or two systems, is larger than what the
choice among neighbouring checkpoints moves.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import sacrebleu

import adl
from adl.runtime.decode.search import SearchOptions


def scores(run: Path, src: list[str], ref: list[str], beams: list[int]) -> list[dict]:
    rows = []
    for ck in sorted((run / "checkpoints").glob("*.pt")):
        model = adl.load_model(str(run), checkpoint=str(ck))
        row: dict = {"checkpoint": ck.stem}
        for beam in beams:
            found = model.search(src, SearchOptions(beam=beam))
            hyps = [h[0][0] for h in found]
            row[f"beam{beam}"] = {
                "bleu": sacrebleu.corpus_bleu(hyps, [ref]).score,
                "chrf": sacrebleu.corpus_chrf(hyps, [ref]).score,
            }
        rows.append(row)
        cells = "  ".join(f"beam {b}: {row[f'beam{b}']['bleu']:6.2f}" for b in beams)
        print(f"  {ck.stem:14s} {cells}", flush=True)
    return rows


def summary(rows: list[dict], beams: list[int]) -> dict:
    steps = [r for r in rows if r["checkpoint"].startswith("step-")]
    greedy = [r[f"beam{beams[0]}"]["bleu"] for r in steps]
    out: dict = {"checkpoints": len(steps)}
    if greedy:
        out[f"beam{beams[0]}_range"] = [min(greedy), max(greedy)]
    for b in beams[1:]:
        gain = [r[f"beam{b}"]["bleu"] - r[f"beam{beams[0]}"]["bleu"] for r in steps]
        if gain:
            out[f"beam{b}_minus_beam{beams[0]}"] = {
                "mean": statistics.mean(gain),
                "least": min(gain),
                "most": max(gain),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, metavar="RUN")
    ap.add_argument("--src", type=Path, required=True, help="test source, one sentence a line")
    ap.add_argument("--ref", type=Path, required=True, help="test reference")
    ap.add_argument("--beams", default="1,4,8", help="beams, the first the one compared with")
    ap.add_argument("--json", type=Path, metavar="OUT", help="write the scores here")
    args = ap.parse_args()
    beams = [int(b) for b in args.beams.split(",")]
    for path in (args.src, args.ref):
        if not path.is_file():
            ap.error(f"{path}: no such file")
    src = args.src.read_text(encoding="utf-8").splitlines()
    ref = args.ref.read_text(encoding="utf-8").splitlines()
    if len(src) != len(ref):
        ap.error(f"{args.src} has {len(src)} lines, {args.ref} {len(ref)}")
    for run in args.runs:
        if not any((run / "checkpoints").glob("*.pt")):
            ap.error(f"{run}: no checkpoints (RUN/checkpoints/*.pt): not a run folder of adl train")
    report = []
    for run in args.runs:
        print(f"{run}:")
        rows = scores(run, src, ref, beams)
        s = summary(rows, beams)
        report.append({"run": str(run), "scores": rows, "summary": s})
        if f"beam{beams[0]}_range" in s:
            low, high = s[f"beam{beams[0]}_range"]
            print(
                f"  beam {beams[0]} over {s['checkpoints']} step checkpoints: {low:.2f}-{high:.2f}"
            )
        for b in beams[1:]:
            g = s.get(f"beam{b}_minus_beam{beams[0]}")
            if g:
                print(
                    f"  beam {b} - beam {beams[0]}: mean {g['mean']:+.2f} "
                    f"({g['least']:+.2f} to {g['most']:+.2f})"
                )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
