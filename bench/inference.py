"""Inference speed of a trained Transformer: ADL's own search in float32 and int8 (torchao),
CTranslate2 float32 and int8, greedy and beam 4, in one run, with BLEU beside each.

    python bench/inference.py --run runs/demo --json out.json   # a trained run (the demo's)
    python bench/inference.py --minutes 3                        # or: train a small one first
    python bench/inference.py --table docs/results/bench/inference_demo.json  # its tables
    python bench/inference.py --update-doc docs/performance.md   # the doc's tables from it

The test sentences are the bundled default corpus' test split (English-French Bible verses,
``adl data bible``; --data, --cache as for ``adl demo``). Without --run, the small_cpu
preset's Transformer (architectures/transformer.*.adl, 2+2 blocks, d_model 256) is trained
on its train split for --minutes first. Every engine decodes the same sentences on
--threads CPU threads (or on the GPU with --device cuda), after a warm-up pass:

1. ADL float32: the PyTorch model through runtime.search (adl.load_model);
2. ADL int8 dynamic and 3. ADL int8 weight-only: the same model after torchao's
   ``quantize_`` (adl.runtime.decode.quantize.int8; the ``quant`` extra; CPU only);
   with --compiled MODES, the same model's step compiled over a static cache for each
   torch.compile mode (adl.runtime.decode.compiled; its warm-up pass compiles);
4. CTranslate2 float32 and 5. CTranslate2 int8: ``adl export --ctranslate2`` with
   --quantization float32 / int8, through ``adl translate --engine ctranslate2``'s code.

Each beam size is timed in --rounds rounds; in each round every engine decodes the whole
set once, the engines taking turns (their order rotating), so that a machine whose load
drifts weighs on all alike. Every pass runs in a fresh process of its own, and so do the
training and the exports: nothing else of the bench holds OpenMP threads that would spin on
the cores the pass needs (``alone``). Printed per beam size: sentences/s (the median
round), the ratio to CTranslate2 float32 and to ADL float32 (the median of the rounds'
ratios, with their range: the noise), BLEU and the length ratio (hypothesis / reference
length, sacrebleu's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import torch
from measure import update_doc as update_blocks

from adl.runtime.search_options import SearchOptions

ROOT = Path(__file__).resolve().parent.parent
BASE = "CTranslate2 float32"  # the check's baseline: ADL's own search >= 0.8x its speed
ADL = "ADL float32"
BAR = 0.8  # issue 57: ADL's own search (float32, eager or compiled) at least 0.8x BASE


def train_small(data_dir: Path, out: Path, minutes: float) -> Path:
    from adl.runtime.run.configure import configure
    from adl.runtime.training.train import train

    arch = ROOT / "architectures"
    config = configure(
        [str(arch / "transformer.enc.adl"), str(arch / "transformer.dec.adl")],
        preset="small_cpu",
        sets=[f"train.max_minutes={minutes}", "train.valid_every=100000"],
        train=(str(data_dir / "train.en"), str(data_dir / "train.fr")),
        valid=(str(data_dir / "valid.en"), str(data_dir / "valid.fr")),
    )
    train(config, out)
    return out


@dataclass(frozen=True)
class Engine:
    """One engine of the comparison, as a fresh process builds it: ADL's own search on the
    run's model (``int8``: after torchao's ``quantize_`` of that kind), or CTranslate2 on an
    exported folder."""

    run: Path
    device: str
    threads: int
    int8: str | None = None
    ct2_folder: Path | None = None
    compiled: str | None = None  # a torch.compile mode: the step compiled over a static cache

    def search(self, workers: int = 1):
        """The engine's ``search``, made for ``workers`` (ADL's model loaded as
        ``adl translate --workers`` loads it: :func:`adl.runtime.decode.driver.loading_for`)."""
        torch.set_num_threads(self.threads)
        if self.ct2_folder is not None:
            from adl.runtime.decode.ct2_translator import Ct2Translator

            return Ct2Translator(self.ct2_folder, self.device, "default", self.threads).search
        import adl
        from adl.runtime.decode.driver import loading_for

        with loading_for(workers):
            if self.compiled is not None:
                return adl.load_model(self.run, device=self.device, compiled=self.compiled).search
            eager = adl.load_model(self.run, device=self.device)
            if self.int8 is None:
                return eager.search
            from adl.runtime.decode.quantize import int8 as quantize
            from adl.runtime.decode.translator import Translator

            return Translator(quantize(eager.model, self.int8), eager.tokenizers).search


def engines(
    run: Path, work: Path, device: str, threads: int, int8: list[str], compiled: list[str]
) -> dict:
    """name -> :class:`Engine`, every engine of the comparison that can run here."""
    from adl.runtime.model.ct2_convert import export_ctranslate2
    from adl.runtime.model.export import export_run

    found = {ADL: Engine(run, device, threads)}
    for mode in compiled:
        found[f"ADL float32 compiled ({mode})"] = Engine(run, device, threads, compiled=mode)
    if device == "cpu":
        for kind in int8:
            found[f"ADL int8 {kind} (torchao)"] = Engine(run, device, threads, int8=kind)
    for q in ("float32", "int8"):
        folder = export_run(run, work / f"export-{q}")
        export_ctranslate2(folder, q)
        found[f"CTranslate2 {q}"] = Engine(run, device, threads, ct2_folder=folder)
    return found


def timed(engine: Engine, sources: list[str], options: SearchOptions) -> tuple[float, list[str]]:
    """(seconds, translations) of one pass over ``sources``, in the process that calls it,
    after a warm-up pass over them (a fresh process's first pass runs cold: its allocator
    and kernels' first calls at each shape)."""
    search = engine.search(options.workers)
    search(sources, options)  # warm-up
    start = time.perf_counter()
    found = search(sources, options)
    return time.perf_counter() - start, [h[0][0] for h in found]


def alone(work, *args):
    """``work(*args)`` in a process of its own, started for it and ended after it.

    Engines that share a process, or that wait in processes of their own (the bench's own
    included, once it has run a parallel operator), slow the one that runs: their OpenMP
    threads spin between parallel regions (with OMP_WAIT_POLICY=ACTIVE for good), on the
    cores it needs. On this 2-core machine the tables measured with the engines in one
    process put ADL at 0.60x CTranslate2 float32 greedy and 0.38x at beam 4; alone, it does
    better (the tables of docs/performance.md, "Inference engines")."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(work, *args).result()


def measure(
    found: dict,
    sources,
    refs,
    beam: int,
    rounds: int,
    sizes: tuple[int, ...],
    workers: tuple[int, ...] = (1,),
) -> list[dict]:
    """Each engine's rows of one beam size, one row per number of workers and batch size:
    seconds per round, BLEU, length ratio. Every engine batches the same sentences:
    each of ``sizes`` source tokens x beam a batch (a row each); every
    pass runs alone (:func:`alone`). With N workers an engine searches N batches at once on
    threads / N threads each (ADL's own search: the ``workers`` search option; CTranslate2:
    its ``inter_threads``; a compiled step's workers are forked processes, each compiling
    its graphs in the warm-up pass). The units (engine, workers, batch) take turns in every
    round."""
    from sacrebleu.metrics import BLEU

    units = [(name, w, tokens) for tokens in sizes for w in workers for name in found]
    seconds: dict[tuple[str, int, int], list[float]] = {u: [] for u in units}
    hyps: dict[tuple[str, int, int], list[str]] = {}
    for r in range(rounds):
        for unit in units[r % len(units) :] + units[: r % len(units)]:
            name, w, tokens = unit
            options = SearchOptions(beam=beam, max_tokens=tokens, workers=w)
            took, hyps[unit] = alone(timed, found[name], sources, options)
            seconds[unit].append(took)
            print(
                f"  beam {beam} round {r + 1} {name} ({w} workers, {tokens} tokens): {took:.1f} s",
                file=sys.stderr,
            )
    speed = {u: len(sources) / statistics.median(seconds[u]) for u in units}
    fastest = lambda engine: max(
        (u for u in units if u[0] == engine), key=speed.__getitem__, default=None
    )
    best = fastest(BASE)
    paired = lambda u, other: [b / a for a, b in zip(seconds[u], seconds[other])]
    spread = lambda r: {"median": statistics.median(r), "min": min(r), "max": max(r)}
    several = len(sizes) > 1
    rows = []
    for unit in units:
        name, w, tokens = unit
        bleu = BLEU().corpus_score(hyps[unit], [refs])
        # CTranslate2 float32 with as many workers, ADL float32 with one (the default), each
        # on the same batches
        same = [u for u in ((BASE, w, tokens), (ADL, 1, tokens)) if u in seconds]
        first = (ADL, 1, sizes[0])  # the translations every row is compared with
        row = {
            "engine": name,
            "beam": beam,
            "workers": w,
            **({"max_tokens": tokens} if several else {}),
            "seconds": seconds[unit],
            "sentences_per_s": speed[unit],
            "vs": {other: spread(paired(unit, (other, n, t))) for other, n, t in same},
            "bleu": bleu.score,
            "length_ratio": bleu.sys_len / bleu.ref_len,
            # translations equal to ADL float32's (one worker, the first batch size), letter
            # for letter
            "same_as_adl": sum(a == b for a, b in zip(hyps[unit], hyps[first]))
            if first in hyps
            else None,
        }
        if best is not None and (len(workers) > 1 or several):
            # against CTranslate2 float32 at its fastest (workers, batches), round by round
            at = {"workers": best[1], **({"max_tokens": best[2]} if several else {})}
            row["vs_best_base"] = {**at, **spread(paired(unit, best))}
        rows.append(row)
    return rows


def tables(result: dict) -> str:
    """The markdown tables of a result (what docs/performance.md shows), one per beam; with
    more than one number of workers or batch size, a column of each and one against
    CTranslate2 float32 at its fastest, and with several batch sizes a line under the table:
    ADL float32 at its fastest against CTranslate2 float32 at its fastest."""
    out = []
    tokens = result["meta"].get("max_tokens")
    sizes = tokens if isinstance(tokens, list) else [tokens] if tokens else []
    n = result["meta"]["sentences"]
    several = len(sizes) > 1
    layouts = len(result["meta"].get("workers", [1])) > 1 or several
    batch = lambda t, beam: f"batches of {t // beam:,} source tokens"
    workers_of = lambda n: f"{n} worker{'s' * (n != 1)}"
    for beam in sorted({row["beam"] for row in result["rows"]}):
        rows = [row for row in result["rows"] if row["beam"] == beam]
        search = "greedy" if beam == 1 else f"beam {beam}"
        batches = " (each batch size for both engines)" if several else ""
        if len(sizes) == 1:
            batches = f" ({batch(sizes[0], beam)}, both engines)"
        best = next((r["vs_best_base"] for r in rows if "vs_best_base" in r), None)
        at = "" if best is None else workers_of(best["workers"])
        if best is not None and "max_tokens" in best:
            at += f", {batch(best['max_tokens'], beam)}"
        if layouts and best is not None:
            head = ["engine", "workers"] + (["batch (source tokens)"] if several else [])
            head += [
                "sentences/s",
                "vs CTranslate2 float32, same workers (rounds)",
                "vs ADL float32, one worker" + (", same batches" if several else ""),
                f"vs CTranslate2 float32, its fastest ({at})",
            ]
        else:
            head = ["engine", "sentences/s", "vs CTranslate2 float32 (rounds)", "vs ADL float32"]
        head += ["BLEU", "length ratio", "same output as ADL float32"]
        out += [
            f"{search}{batches}:",
            "",
            "| " + " | ".join(head) + " |",
            "|---|" + "---:|" * (len(head) - 1),
        ]
        spread = lambda r: f"{r['median']:.2f}x ({r['min']:.2f}–{r['max']:.2f})"
        for row in rows:
            base, adl = row["vs"].get(BASE), row["vs"].get(ADL)
            same = "–" if row.get("same_as_adl") is None else f"{row['same_as_adl']:,}/{n:,}"
            speeds = [spread(base) if base else "–", f"{adl['median']:.2f}x" if adl else "–"]
            if layouts and best is not None:
                fastest = spread(row["vs_best_base"]) if "vs_best_base" in row else "–"
                cells = [row["engine"], str(row.get("workers", 1))]
                if several:
                    cells.append(f"{row['max_tokens'] // beam:,}")
                cells += [f"{row['sentences_per_s']:,.1f}", *speeds, fastest]
            else:
                cells = [row["engine"], f"{row['sentences_per_s']:,.1f}", *speeds]
            cells += [f"{row['bleu']:.2f}", f"{row['length_ratio']:.3f}", same]
            out.append("| " + " | ".join(cells) + " |")
        own = [r for r in rows if r["engine"].startswith(ADL) and "vs_best_base" in r]
        if own and best is not None:
            top = max(own, key=lambda r: r["sentences_per_s"])
            where = workers_of(top["workers"])
            if "max_tokens" in top:
                where += f", {batch(top['max_tokens'], beam)}"
            ratio = top["vs_best_base"]
            out += [
                "",
                f"ADL's own search at its fastest ({top['engine']}, {where}) / {BASE} at its "
                f"fastest ({at}): {spread(ratio)}, round by round; issue 57's bar, "
                f"{BAR:.2f}x in the median: {'met' if ratio['median'] >= BAR else 'not met'}.",
            ]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def update_doc(doc: Path, root: Path = ROOT, write: bool = True) -> list[str]:
    """The ``<!-- bench inference RESULT.json -->`` blocks of ``doc`` from their results."""
    return update_blocks(doc, "inference", tables, root, write)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, help="a trained run (default: train a small one)")
    p.add_argument("--minutes", type=float, default=3.0, help="training time without --run")
    p.add_argument("--data", type=Path, default=Path("data/bible"), help="the corpus folder")
    p.add_argument("--cache", type=Path, default=Path("data/cache"), help="the wheel cache")
    p.add_argument("--sentences", type=int, default=0, help="test sentences (0: all)")
    p.add_argument("--beams", default="1,4", help="beam sizes, comma separated (1: greedy)")
    p.add_argument("--rounds", type=int, default=3, help="timed rounds per beam size")
    p.add_argument("--int8", default="dynamic,weight", help="torchao int8 kinds ('' for none)")
    p.add_argument(
        "--compiled",
        default="",
        help="torch.compile modes of ADL's step over a static cache, comma separated, each an "
        "engine (reduce-overhead: CUDA graphs on a GPU; '' for none)",
    )
    p.add_argument("--threads", type=int, default=2, help="CPU threads of every engine")
    p.add_argument(
        "--workers",
        default="1,2",
        help="numbers of workers, comma separated: each engine searches N batches at once on "
        "threads / N threads each (ADL: the workers search option; CTranslate2: inter_threads)",
    )
    tokens = SearchOptions().max_tokens  # the search's default
    p.add_argument(
        "--max-tokens",
        default=str(tokens),
        help="source tokens x beam a batch, comma separated: each a batch size for every "
        "engine, and a line for each beam: each engine at its fastest",
    )
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--work", type=Path, help="where to put the run and exports (default: tmp)")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--table", type=Path, help="print the tables of this result file and stop")
    p.add_argument(
        "--update-doc", type=Path, help="rewrite this document's blocks from their results"
    )
    args = p.parse_args()
    if args.update_doc:
        print("changed:", update_doc(args.update_doc) or "nothing")
        return
    if args.table:
        print(tables(json.loads(args.table.read_text())), end="")
        return

    from adl.runtime.data import bible

    info = bible.bible("en-fr", out=args.data, max_words=20, cache=args.cache)
    test_src, test_ref = info.files(args.data, "test")
    sources = test_src.read_text(encoding="utf-8").splitlines()
    refs = test_ref.read_text(encoding="utf-8").splitlines()
    if args.sentences:
        sources, refs = sources[: args.sentences], refs[: args.sentences]
    work = args.work or Path(tempfile.mkdtemp(prefix="adl-bench-inference-"))
    run = args.run
    if run is None:
        print(f"training the small_cpu Transformer for {args.minutes:g} minutes -> {work / 'run'}")
        run = alone(train_small, args.data, work / "run", args.minutes)
    int8 = [k for k in args.int8.split(",") if k]
    compiled = [m for m in args.compiled.split(",") if m]
    workers = tuple(int(w) for w in args.workers.split(","))
    sizes = tuple(int(t) for t in args.max_tokens.split(","))
    found = alone(engines, run, work, args.device, args.threads, int8, compiled)
    load = os.getloadavg()[0]
    rows = []
    for beam in (int(b) for b in args.beams.split(",")):
        rows += measure(found, sources, refs, beam, args.rounds, sizes, workers)
    import ctranslate2

    result = {
        "meta": {
            "run": str(run),
            "sentences": len(sources),
            "test": str(test_src),
            "threads": args.threads,
            "workers": list(workers),
            "device": args.device,
            "rounds": args.rounds,
            "max_tokens": sizes[0] if len(sizes) == 1 else list(sizes),
            # OpenMP threads spin (ACTIVE) or sleep between parallel regions; each engine's
            # speed moves with it (docs/performance.md, "Inference engines")
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "torch": torch.__version__,
            "ctranslate2": ctranslate2.__version__,
            "torchao": _version("torchao"),
            "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
        },
        "rows": rows,
    }
    print(
        f"{len(sources):,} test sentences ({test_src}), {args.threads} threads, device "
        f"{args.device}, torch {torch.__version__}, load average {load:.1f} at the start"
    )
    print(tables(result), end="")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
