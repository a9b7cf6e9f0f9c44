"""Why beam search translates short: the search or the model? Greedy against beam search on
a trained run, over the length penalties, with the model's own scores of what each finds.

    python bench/beam_lengths.py --run runs/demo --data data/bible [--beams 4,5]
                                 [--json docs/results/bench/beam_lengths.json]
    python bench/beam_lengths.py --update-doc docs/performance.md   # its tables from the json

For every setting (greedy; each beam size with no length penalty, fairseq's score/length^α
and GNMT's score/((5+length)/6)^α, α in --alphas) the validation and the test sentences are
translated by ADL's own search and scored with sacrebleu: BLEU, the length ratio
(hypothesis / reference length) and the brevity penalty. The setting a user should take is
the best by validation BLEU; the test column is printed beside it, not used to choose.

Which of the two is to blame is read from the model's scores (log p(y | x), teacher forced,
under each setting's own criterion):

- ``search errors``: the sentences where the beam's output scores below greedy's under the
  criterion the beam maximises (an exact search never does): a search that loses what
  greedy found is at fault;
- ``beam > reference``: the sentences where the model scores the beam's output above the
  reference: where the beam's output is short and the model prefers it, the model is at
  fault (Stahlberg and Byrne 2019, "On NMT search errors and model errors").

With --ctranslate2, the exported model's beam search (an independent implementation) gives
its length ratio beside ADL's at each beam size and penalty it shares.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from measure import update_doc as update_blocks

ROOT = Path(__file__).resolve().parent.parent


def criterion(score: float, length: int, penalty: str, alpha: float) -> float:
    """The score the search ranks finished hypotheses by (length: pieces, eos included)."""
    from adl.runtime.decode.hypotheses import length_penalty

    return score / length_penalty(length, penalty, alpha)


def scored(translator, sources: list[str], lines: list[str]) -> list[tuple[float, int]]:
    """The model's log-probability of each line given its source, and the line's length in
    target pieces (eos included)."""
    lengths = [len(ids) + 1 for ids in translator.tokenizers.encode_tgt(lines)]
    return list(zip(translator.score(sources, lines), lengths))


def one_setting(translator, sources, refs, beam, penalty, alpha, against=None) -> dict:
    """BLEU and lengths of one setting on one set, and (``against``: the greedy output's and
    the references' :func:`scored`, the same for every setting) the model's verdicts."""
    from sacrebleu.metrics import BLEU

    from adl.runtime.decode.search import SearchOptions

    options = SearchOptions(beam=beam, penalty=penalty, alpha=alpha)
    hyps = [found[0][0] for found in translator.search(sources, options)]
    bleu = BLEU().corpus_score(hyps, [refs])
    row = {
        "beam": beam,
        "penalty": penalty if beam > 1 else "-",
        "alpha": alpha if beam > 1 and penalty != "none" else None,
        "bleu": bleu.score,
        "length_ratio": bleu.sys_len / bleu.ref_len,
        "brevity_penalty": bleu.bp,
        "hyps": hyps,
    }
    if against is not None:
        crit = lambda found: [criterion(s, n, penalty, alpha) for s, n in found]
        mine = crit(scored(translator, sources, hyps))
        greedy, ref = crit(against["greedy"]), crit(against["reference"])
        row["search_errors"] = sum(m < g - 1e-4 for m, g in zip(mine, greedy))
        row["beam_over_reference"] = sum(m > r for m, r in zip(mine, ref))
        row["sentences"] = len(sources)
    return row


def settings(beams: list[int], alphas: list[float]) -> list[tuple[int, str, float]]:
    out = [(b, "none", 1.0) for b in beams]
    out += [(b, p, a) for b in beams for p in ("fairseq", "gnmt") for a in alphas]
    return out


def ctranslate2_ratios(run: Path, work: Path, sources, refs, grid, threads: int) -> dict:
    """The exported model's length ratio at each (beam, penalty, alpha) it shares: fairseq's
    normalisation (CTranslate2's length_penalty) and none."""
    from sacrebleu.metrics import BLEU

    from adl.runtime.decode.ct2_translator import Ct2Translator
    from adl.runtime.decode.search import SearchOptions
    from adl.runtime.model.ct2_convert import export_ctranslate2
    from adl.runtime.model.export import export_run

    folder = export_run(run, work / "export")
    export_ctranslate2(folder, "float32")
    engine = Ct2Translator(folder, "cpu", "default", threads)
    out = {}
    for beam, penalty, alpha in grid:
        if penalty == "gnmt":
            continue
        options = SearchOptions(beam=beam, penalty=penalty, alpha=alpha)
        hyps = [found[0][0] for found in engine.search(sources, options)]
        bleu = BLEU().corpus_score(hyps, [refs])
        out[key(beam, penalty, None if penalty == "none" else alpha)] = bleu.sys_len / bleu.ref_len
    return out


def table(rows: list[dict], test: dict[str, dict]) -> str:
    lines = [
        "| search | penalty | α | valid BLEU | length ratio | brevity penalty | search errors "
        "| beam > reference | test BLEU | test length ratio |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        key = name(r)
        t = test.get(key)
        alpha = "" if r["alpha"] is None else f"{r['alpha']:g}"
        errors = f"{r['search_errors']}/{r['sentences']}" if "search_errors" in r else "–"
        over = f"{r['beam_over_reference']}/{r['sentences']}" if "search_errors" in r else "–"
        lines.append(
            f"| {'greedy' if r['beam'] == 1 else 'beam ' + str(r['beam'])} | {r['penalty']} | "
            f"{alpha} | {r['bleu']:.2f} | {r['length_ratio']:.3f} | {r['brevity_penalty']:.3f} "
            f"| {errors} | {over} | "
            + (f"{t['bleu']:.2f} | {t['length_ratio']:.3f} |" if t else "– | – |")
        )
    return "\n".join(lines) + "\n"


def document(result: dict) -> str:
    """The Markdown of a result file: its run, the table, the choice by validation and
    CTranslate2's length ratios where measured."""
    test = {name(r): r for r in result["sets"]["test"]}
    out = [f"`{result['run']}` on `{result['data']}`:", "", table(result["sets"]["valid"], test)]
    out.append(f"Best by validation BLEU: {label(result['best_by_valid'])}.")
    ct2 = result.get("ctranslate2_valid_length_ratio")
    if ct2:
        valid = {name(r): r for r in result["sets"]["valid"]}
        pairs = [
            f"{label(k)} {valid[k]['length_ratio']:.3f} / {v:.3f}"
            for k, v in ct2.items()
            if k in valid
        ]
        out += ["", "Validation length ratio, ADL / CTranslate2: " + "; ".join(pairs) + "."]
    return "\n".join(out) + "\n"


def label(key: str) -> str:
    """beam/penalty/alpha as words."""
    beam, penalty, alpha = key.split("/")
    if beam == "1":
        return "greedy"
    penalized = f"{penalty} α {alpha}"
    return f"beam {beam}, " + ("no length penalty" if penalty == "none" else penalized)


def name(row: dict) -> str:
    """A setting's key: beam/penalty/alpha (alpha empty where no penalty)."""
    return key(row["beam"], row["penalty"], row["alpha"])


def key(beam: int, penalty: str, alpha: float | None) -> str:
    return f"{beam}/{penalty}/{'' if alpha is None else f'{alpha:g}'}"


def update_doc(doc: Path, root: Path = ROOT, write: bool = True) -> list[str]:
    """The ``<!-- bench beam_lengths RESULT.json -->`` blocks of ``doc`` from their results."""
    return update_blocks(doc, "beam_lengths", document, root, write)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, help="a trained run")
    p.add_argument(
        "--update-doc", type=Path, help="rewrite this document's blocks from their results"
    )
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="its corpus folder")
    p.add_argument("--langs", default="en,fr", help="source and target suffixes")
    p.add_argument("--beams", default="4,5", help="beam sizes, comma separated")
    p.add_argument("--alphas", default="0.6,1.0,1.5", help="length penalty exponents")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ctranslate2", action="store_true", help="CTranslate2's ratios beside")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args()
    if args.update_doc:
        print("changed:", update_doc(args.update_doc) or "nothing")
        return
    if args.run is None:
        p.error("--run is needed (or --update-doc)")

    import tempfile

    import adl

    torch.set_num_threads(args.threads)
    src, tgt = args.langs.split(",")
    sets = {
        split: (
            (args.data / f"{split}.{src}").read_text("utf-8").splitlines(),
            (args.data / f"{split}.{tgt}").read_text("utf-8").splitlines(),
        )
        for split in ("valid", "test")
    }
    translator = adl.load_model(args.run)
    grid = settings(
        [int(b) for b in args.beams.split(",")], [float(a) for a in args.alphas.split(",")]
    )
    result: dict = {"run": str(args.run), "data": str(args.data), "sets": {}}
    for split, (sources, refs) in sets.items():
        greedy = one_setting(translator, sources, refs, 1, "none", 1.0)
        against = {
            "greedy": scored(translator, sources, greedy["hyps"]),
            "reference": scored(translator, sources, refs),
        }
        rows = [greedy]
        for beam, penalty, alpha in grid:
            rows.append(one_setting(translator, sources, refs, beam, penalty, alpha, against))
            print(f"  {split} {name(rows[-1])}: BLEU {rows[-1]['bleu']:.2f}", file=sys.stderr)
        result["sets"][split] = [{k: v for k, v in r.items() if k != "hyps"} for r in rows]
    if args.ctranslate2:
        with tempfile.TemporaryDirectory() as work:
            sources, refs = sets["valid"]
            result["ctranslate2_valid_length_ratio"] = ctranslate2_ratios(
                args.run, Path(work), sources, refs, grid, args.threads
            )
    valid = result["sets"]["valid"]
    best = max(valid, key=lambda r: r["bleu"])
    result["best_by_valid"] = name(best)
    print(document(result), end="")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
