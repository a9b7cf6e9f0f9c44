"""ADL beside Sockeye 3 and fairseq: the same recipe, the same minutes, at the same time.

    python bench/peers.py [--corpus DIR] [--minutes 15] [--peers sockeye,fairseq]
                          [--preset small_cpu] [--set KEY=VALUE ...] [--out DIR]

1. The corpus (default: the bundled Bible corpus, English-French verses of at most 20 words,
   as in ``adl demo``; ``--corpus`` takes any folder of train/valid/test files) gets one
   sentencepiece model, trained once for all systems, and one length filter.
2. Every system trains with the recipe of the ADL preset (sizes, batch, peak learning rate,
   warm-up, betas, label smoothing, clipping, validation interval, best-checkpoint metric),
   written in each toolkit's terms (bench/peerlib/systems.py), one process and ``--threads``
   threads each, never more processes than ``--slots`` (default: cores / threads). When the
   slots cannot hold every system at once, the systems run in rounds, and ADL runs in every
   round beside its peers (its runs are reported per round).
3. Each system translates the whole test set from its best checkpoint, greedy and with a
   beam of ``--beam``; sacrebleu scores every test line (a line a system left out counts as
   empty and is listed).
4. The table (updates, target tokens seen, BLEU / chrF with sacrebleu's signatures, brevity
   penalty and length ratio, decoding time, left-out lines) goes to the terminal and to
   ``OUT/table.md``, every figure also to ``OUT/results.json``; the logs stay in ``OUT``.

The peers' virtualenvs are made once under ``--cache`` (bench/peerlib/venvs.py). On a
machine with a GPU (``--device auto``) every system trains and decodes on it.
``--dry-run`` prints the commands without running them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peerlib import recipe as recipe_mod  # noqa: E402
from peerlib import systems, table, venvs  # noqa: E402
from peerlib.prepare import find_files, prepare  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def plan_rounds(peers: list[str], slots: int) -> list[list[str]]:
    """Systems per round: all at once when they fit, else ADL beside slots - 1 peers."""
    if slots >= 1 + len(peers):
        return [["adl", *peers]]
    if slots < 2:
        return [["adl"]] + [[p] for p in peers]
    per = slots - 1
    return [["adl", *peers[i : i + per]] for i in range(0, len(peers), per)]


def bible_corpus(cache: Path) -> Path:
    """The default corpus, as ``adl demo`` makes it (data/bible, en-fr, verses <= 20 words)."""
    from adl.runtime import bible

    out = ROOT / "data" / "bible"
    bible.bible("en-fr", out=out, max_words=20, cache=cache.parent)
    return out


def run_step(step: systems.Step, log: Path, threads: int) -> tuple[float, str]:
    """Run one command (logged); returns (seconds, error or '')."""
    env = {**os.environ, **step.env}
    env.update({k: str(threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    env["PYTHONUNBUFFERED"] = "1"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + shlex.join(step.argv) + "\n")
        out.flush()
        proc = subprocess.Popen(
            step.argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            code = proc.wait(timeout=step.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return time.monotonic() - started, f"stopped after {step.timeout:.0f} s"
    took = time.monotonic() - started
    return took, "" if code == 0 else f"exit {code} (see {log})"


def run_job(system: systems.System, minutes: float, beams: list[int], threads: int, rec: dict):
    """prepare, train, decode: one system's commands in order (in its own thread)."""
    steps = system.prepare() + [system.train(minutes)]
    steps[-1].timeout = 60 * minutes + max(600.0, 30 * minutes)  # the final validation
    steps += [system.decode(k) for k in beams]
    for step in steps:
        seconds, error = run_step(step, system.out / f"{step.name}.log", threads)
        rec[step.name] = seconds
        if error and step.name in ("prepare", "greedy", "beam"):
            rec.setdefault("errors", []).append(f"{step.name}: {error}")
            if step.name == "prepare":
                return
        elif error:  # training stopped by the timeout still leaves a best checkpoint
            rec.setdefault("errors", []).append(f"train: {error}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, help="folder of train/valid/test files (default: Bible)")
    p.add_argument("--langs", nargs=2, metavar=("SRC", "TGT"), help="the corpus' file suffixes")
    p.add_argument("--minutes", type=float, default=15.0, help="training minutes per system")
    p.add_argument("--peers", default="sockeye,fairseq", help="sockeye, fairseq, torch")
    p.add_argument(
        "--preset", default="small_cpu", help="the ADL preset every system follows (small_cpu)"
    )
    p.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE")
    p.add_argument("--out", type=Path, help="output folder (default runs/peers/CORPUS)")
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "cache" / "peers")
    p.add_argument("--threads", type=int, default=1, help="threads per process")
    p.add_argument("--slots", type=int, help="processes at once (default cores / threads)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument(
        "--split",
        choices=("test", "valid"),
        default="test",
        help="the split translated and scored (valid: to compare recipes without the test set)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = p.parse_args(argv)

    peers = [x for x in args.peers.split(",") if x]
    unknown = [x for x in peers if x not in systems.SYSTEMS or x == "adl"]
    if unknown:
        p.error(f"unknown peer(s) {', '.join(unknown)}; peers: sockeye, fairseq, torch")
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    slots = args.slots or max((os.cpu_count() or 1) // args.threads, 1)
    corpus = args.corpus or bible_corpus(args.cache)
    out = args.out or ROOT / "runs" / "peers" / corpus.resolve().name
    sets = [*args.sets, f"train.threads={args.threads}"]
    config = recipe_mod.configure(
        [str(ROOT / f) for f in recipe_mod.ARCH], preset=args.preset, sets=sets
    )
    recipe = recipe_mod.from_config(config, args.preset, sets)
    beams = [1, args.beam] if args.beam > 1 else [1]

    if out.exists() and any(out.glob("round*")) and not args.dry_run:
        p.error(f"{out} holds an earlier benchmark: choose another --out or remove it")
    out.mkdir(parents=True, exist_ok=True)
    files = find_files(corpus, tuple(args.langs) if args.langs else None)
    print(f"corpus {corpus}: preparing one sentencepiece model and the pieces -> {out}/data")
    data = prepare(files, out / "data", recipe, config.data)
    c = data.counts
    print(
        f"  train {c['train']:,} pairs ({c['dropped']:,} over the length filter dropped, "
        f"{c['dropped_tokens_percent']:g} % of the target tokens), "
        f"valid {c['valid']:,}, test {c['test']:,}"
    )
    for split in ("valid", "test"):
        print(
            f"  {split}: {c[f'{split}_over_max_len']:,} pairs with a side over max_len "
            f"{recipe.max_len}, {c[f'{split}_over_output_limit']:,} references longer than "
            "ADL's default output limit (1.5 x source + 10 pieces)"
        )
    venv = {name: None for name in ("adl", "torch")}
    rounds = plan_rounds(peers, slots)
    made = []
    for i, names in enumerate(rounds, 1):
        for name in names:
            if name in ("sockeye", "fairseq") and name not in venv:
                venv[name] = None if args.dry_run else venvs.ensure(name, args.cache)
            root = venv.get(name) or (args.cache / name if name in venvs.RECIPES else None)
            made.append(
                (
                    i,
                    systems.make(
                        name, recipe, data, out / f"round{i}" / name, device, root, args.split
                    ),
                )
            )
    if args.dry_run:
        for i, s in made:
            for step in [*s.prepare(), s.train(args.minutes), *(s.decode(k) for k in beams)]:
                print(f"# round {i}, {s.label}, {step.name}\n{shlex.join(step.argv)}")
        return 0

    records: dict[int, dict] = {}
    for i in range(1, len(rounds) + 1):
        jobs = [(k, s) for k, (r, s) in enumerate(made) if r == i]
        print(
            f"round {i}/{len(rounds)}: {', '.join(s.label for _, s in jobs)} "
            f"for {args.minutes:g} minutes each, at the same time"
        )
        threads = []
        for k, s in jobs:
            records[k] = {}
            t = threading.Thread(
                target=run_job, args=(s, args.minutes, beams, args.threads, records[k])
            )
            t.start()
            threads.append(t)
        for t in threads:
            t.join()

    refs = systems.read_lines(data.raw[args.split][1])
    rows = []
    for k, (i, s) in enumerate(made):
        rec = records[k]
        row = table.Row(s.label, i, train_seconds=rec.get("train"))
        try:
            st = s.stats()
            row.updates, row.tokens, row.best_update = (
                st["updates"],
                st["tokens"],
                st["best_update"],
            )
        except (OSError, KeyError, ValueError, RuntimeError) as exc:
            row.failed = f"no training record ({exc})"
        for beam in beams:
            step = "beam" if beam > 1 else "greedy"
            hyps = s.hypotheses(beam)
            if not hyps:
                continue
            hyps = hyps + [None] * (len(refs) - len(hyps))
            row.scores[beam] = table.score(hyps, refs, rec.get(step))
        if rec.get("errors"):
            row.note = "; ".join(rec["errors"])
        rows.append(row)
    sig = table.signatures()
    notes = [
        f"corpus {corpus}: {c['train']:,} training pairs ({c['dropped']:,} dropped by the "
        f"length filter, max_len {recipe.max_len}: {c['dropped_tokens_percent']:g} % of the "
        f"target tokens), {c['valid']:,} validation, "
        f"{c['test']:,} test; one {recipe.vocab:,}-piece sentencepiece model for all",
        f"recipe of ADL's preset {args.preset}: d_model {recipe.d_model}, {recipe.layers}+"
        f"{recipe.layers} blocks, FFN {recipe.ffn}, {recipe.heads} heads, dropout "
        f"{recipe.dropout:g}, batches of {recipe.max_tokens:,} tokens, Adam "
        f"{recipe.betas}, peak learning rate {recipe.lr:g} after {recipe.warmup} warm-up "
        f"updates then inverse square root, label smoothing {recipe.label_smoothing:g}, "
        f"clipping {recipe.clip_norm:g}, validation every {recipe.valid_every} updates, "
        f"best checkpoint by {recipe.best_metric}"
        + (
            f"; ADL's best may be the average of its last 2 to {recipe.average_last} "
            "checkpoints (train.average_last, chosen on validation; 'avg A–B' under best at)"
            if recipe.average_last
            else ""
        ),
        f"Sockeye's inv-sqrt-decay is not normalised by the warm-up (its peak is "
        f"initial_lr / sqrt(warmup)): its --initial-learning-rate is "
        f"{recipe.sockeye_initial_lr:.6g} = {recipe.lr:g} x sqrt({recipe.warmup}), the same "
        "peak and curve",
        f"{args.minutes:g} minutes of training each, {args.threads} thread(s) per process, "
        f"{slots} processes at once on {device}; systems of one round ran at the same time",
        f"BLEU {sig['bleu']}; chrF {sig['chrf']}",
    ]
    title = f"Peers on {corpus.resolve().name}" + (
        " (validation set)" if args.split == "valid" else ""
    )
    md = table.markdown(rows, beams, title, notes)
    (out / "table.md").write_text(md, encoding="utf-8")
    result = {
        "corpus": str(corpus),
        "recipe": recipe.to_dict(),
        "minutes": args.minutes,
        "device": device,
        "slots": slots,
        "counts": c,
        "signatures": sig,
        "rows": [r.to_dict() for r in rows],
    }
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
