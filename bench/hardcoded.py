"""What attention you do not learn costs: the hard-coded Gaussian models of You et al. (2020),
the fixed encoder patterns of Raganato et al. (2020) and the hard-retrieval decoder of Xu et
al. (2020), each against its Transformer baseline, measured by the runtime's one cost
instrument (adl.runtime.cost, the same as the cost columns of `adl sweep`).

    python bench/hardcoded.py [--sizes sweep,iwslt] [--lengths 16,64,256] [--rounds 3]
                              [--threads 1] [--json OUT]

For every model and sentence length (both sides): training peak memory, training tokens/s,
decoding sentences/s greedy and with beam 4, each as a ratio to the baseline measured in the
same run, the models taking turns (adl/runtime/cost.py says exactly what each figure counts).

Sizes:
  sweep   each paper's bundled sweep spec (adl/runtime/sweeps/NAME.yaml): its preset, settings
          and $variables, as `adl sweep` trains them.
  iwslt   the papers' own small sizes: You et al.'s IWSLT Transformer (d_model 288, 4 heads,
          5+5 layers, feed-forward 507) for You et al., and for Raganato et al. with 8 heads
          (7 fixed + 1 learned); Xu et al.'s Transformer base (d_model 512, 8 heads, 6+6).
          Vocabulary 8,000 on both sides.

Targets (issue 25), against the baseline at each length: HC-SA, HC-ALL, SH-X and 7F+1L
train with at most its memory and at least its tokens/s, and decode at least as fast.

The hard-retrieval bound (Xu et al.): one model with the Transformer's decoder is decoded
three ways, taking turns, with its attention cores timed: soft (standard attention), hard
(hard retrieval: the argmax of the scores picks one value), and hard with the pick reduced to
the argmax alone. Soft's attention time less hard's without its pick is what removing the
weighted sum entirely would save (the scores computed, then no value weighted or picked:
what no way of using the scores can beat); hard retrieval's saving is printed as a share of
it, with a profile of soft and hard decoding (the operations that take the time). The third
way gives the ceiling of any retrieval: every way of retrieving must find the argmax, so
what is left of the bound once that is paid is the most any can reach.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from adl.runtime import cost

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "architectures"
GROUPS = {  # spec name: (baseline, {model: files})
    "you2020": (
        "BASE",
        {
            "BASE": ("you2020/base.enc.adl", "you2020/base.dec.adl"),
            "HC-SA": ("you2020/hc_sa.enc.adl", "you2020/hc_sa.dec.adl"),
            "HC-ALL": ("you2020/hc_sa.enc.adl", "you2020/hc_all.dec.adl"),
            "SH-X": ("you2020/hc_sa.enc.adl", "you2020/sh_x.dec.adl"),
        },
    ),
    "raganato2020": (
        "8L",
        {
            "8L": ("raganato2020/8l.enc.adl", "transformer.dec.adl"),
            "7F+1L": ("raganato2020/7f_token_1l.enc.adl", "transformer.dec.adl"),
        },
    ),
    "xu2020": (
        "BASE",
        {
            "BASE": ("xu2020/base.enc.adl", "xu2020/base.dec.adl"),
            "HARD-DEC": ("xu2020/base.enc.adl", "xu2020/hard_dec_self_cross.dec.adl"),
        },
    ),
}
TARGETS = {"you2020": ("HC-SA", "HC-ALL", "SH-X"), "raganato2020": ("7F+1L",)}
IWSLT = {  # the papers' own sizes
    "you2020": dict(d_model=288, heads=4, dropout=0.1, vars={"layers": 5, "ff": 507}),
    "raganato2020": dict(d_model=288, heads=8, dropout=0.1, vars={"layers": 5}),
    "xu2020": dict(d_model=512, heads=8, dropout=0.1, vars={"layers": 6}),
}
VOCAB = 8000


def iwslt_candidates(group: str) -> list[cost.Candidate]:
    from adl.runtime.model.build import assign_files

    _, models = GROUPS[group]
    out = []
    for name, files in models.items():
        model = dict(IWSLT[group], tie_embeddings=True, share_embeddings=True)
        model.update(assign_files([str(ARCH / f) for f in files]))
        out.append(cost.Candidate(name, model, VOCAB))
    return out


def sweep_candidates(group: str) -> list[cost.Candidate]:
    """The models as the bundled spec trains them (its preset, settings and variables)."""
    from adl.runtime.sweep.plan import DataFiles, system_config
    from adl.runtime.sweep.reader import read_spec
    from adl.runtime.sweep.spec import spec_path

    spec, problems = read_spec(spec_path(group))
    if problems:
        raise SystemExit("\n".join(p.render() for p in problems))
    none = ("-", "-")
    data = DataFiles(train=none, valid=None, test=none, langs=none, bible=True)
    _, models = GROUPS[group]
    out = []
    for name, files in models.items():
        config = system_config(spec, spec.systems[0], data)  # the spec's recipe
        out.append(cost.Candidate.of(name, [str(ARCH / f) for f in files], config))
    return out


# --- the hard-retrieval bound ------------------------------------------------------------------
def first_values(scores, v):
    """The first value of each head for every query: the right shape, the wrong value;
    decoding to a fixed length (cost._NoEos) does the same work whatever the values are."""
    B, H, T, _ = scores.shape
    return v.narrow(2, 0, 1).expand(B, H, T, v.size(-1))


def argmax_only(scores, v):
    """What every way of retrieving must do, and no more: the argmax of the scores, then
    :func:`first_values`."""
    scores.argmax(-1)
    return first_values(scores, v)


@contextmanager
def timed(totals: dict[str, float], clock, argmax: bool = False):
    """Add the seconds spent in every dot-product attention core (``DotAttention.attend``:
    the weighted sum or the retrieval, and the output projection) and in hard retrieval's
    pick of a value (:func:`adl.nn.retrieval.pick`, or :func:`argmax_only` in its place
    with ``argmax``) to ``totals``: a profile of just these calls, with a clock read around
    each (no profiler overhead on the operations)."""
    import adl.nn.retrieval as retrieval
    from adl.nn.attention import DotAttention

    attend, pick = DotAttention.attend, retrieval.pick
    chosen = argmax_only if argmax else pick

    def attend_timed(self, *args, **kwargs):
        started = clock()
        try:
            return attend(self, *args, **kwargs)
        finally:
            totals["attention"] += clock() - started

    def pick_timed(*args, **kwargs):
        started = clock()
        try:
            return chosen(*args, **kwargs)
        finally:
            totals["pick"] += clock() - started

    DotAttention.attend, retrieval.pick = attend_timed, pick_timed
    try:
        yield
    finally:
        DotAttention.attend, retrieval.pick = attend, pick


def top_operations(model, src, length: int, beam: int, way: str) -> dict[str, float]:
    """The six operations that take most of one decoding (self CPU time by the profiler, ms)."""
    from adl.nn.hard import set_decode_attention

    set_decode_attention(model.model, way)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        cost.decode_seconds(model, src, None, beam, length)
    set_decode_attention(model.model, None)
    ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return {e.key: e.self_cpu_time_total / 1000 for e in ops[:6]}


def bound(candidate: cost.Candidate, length: int, sentences: int, rounds: int, beam: int):
    """Hard retrieval's speed-up against the bound of removing the weighted sum.

    One model decoded soft and hard, taking turns ``rounds`` times, with the attention cores
    timed: they take A_soft and A_hard of the decoding; hard retrieval computes the same
    scores and output projection as soft attention and then picks a value (P). Removing the
    weighted sum entirely (softmax and the sum, keeping the scores) would save
    W = A_soft - (A_hard - P) of the soft decoding's time T; hard retrieval saves
    A_soft - A_hard = W - P; its share of the bound is (A_soft - A_hard) / W. Medians over
    rounds. Hard's speed-up by the clock (T_soft / T_hard) is printed beside it.

    A third way, taking turns with them, decodes hard with the pick reduced to its argmax
    (:func:`argmax_only`, P_argmax): no retrieval can cost less than finding the largest
    score, so 1 - P_argmax / W is the most of the bound any retrieval can reach (its
    ceiling)."""
    from adl.nn.hard import set_decode_attention

    model = cost._NoEos(cost.model_of(candidate, "cpu").eval())
    clock = cost.timer(torch.get_num_threads(), "cpu")
    gen = torch.Generator().manual_seed(2)
    src, _, _ = cost.synthetic(model.model, sentences, length, "cpu", gen)
    ways = ("soft", "hard", "argmax")
    runs: dict[str, dict[str, list[float]]] = {
        w: {"all": [], "attention": [], "pick": []} for w in ways
    }
    for r in range(rounds + 1):  # the first round warms up
        for way in ways[r % 3 :] + ways[: r % 3]:  # each way first in turn
            set_decode_attention(model.model, "soft" if way == "soft" else "hard")
            totals = {"attention": 0.0, "pick": 0.0}
            with timed(totals, clock, argmax=way == "argmax"):
                seconds = cost.decode_seconds(model, src, None, beam, length, clock)
            if r:
                for key, value in (("all", seconds), *totals.items()):
                    runs[way][key].append(value)
    set_decode_attention(model.model, None)
    med = {w: {k: statistics.median(v) for k, v in by.items()} for w, by in runs.items()}
    T = med["soft"]["all"]
    saved_hard = med["soft"]["attention"] - med["hard"]["attention"]
    saved_bound = med["soft"]["attention"] - (med["hard"]["attention"] - med["hard"]["pick"])
    return {
        "beam": beam,
        "seconds": med,
        "attention_share": med["soft"]["attention"] / T,
        "bound_speedup": T / (T - saved_bound),
        "hard_speedup": T / (T - saved_hard),
        "hard_speedup_clock": T / med["hard"]["all"],
        "share_of_bound": saved_hard / saved_bound if saved_bound > 0 else None,
        "ceiling": 1 - med["argmax"]["pick"] / saved_bound if saved_bound > 0 else None,
        "top": {w: top_operations(model, src, length, beam, w) for w in ("soft", "hard")},
    }


# --- report ----------------------------------------------------------------------------------
def print_table(title: str, table: cost.CostTable) -> None:
    """Print the ratios to the baseline, and the baseline's own figures."""
    print(f"\n{title} (baseline {table.baseline}; ratios to it, median of {table.workload.rounds})")
    print(
        f"  {'model':10s} {'length':>6s} {'params':>11s} {'memory':>7s} {'train':>7s} {'greedy':>7s} {'beam':>7s}"
    )
    for name, by in table.figures.items():
        for L in by:
            r = [table.ratio(name, L, f) for f in cost.FIGURES]
            print(
                f"  {name:10s} {L:6d} {table.params[name]:11,d} " + " ".join(f"{x:7.2f}" for x in r)
            )
    base = table.figures[table.baseline]
    print(
        "  baseline: "
        + "; ".join(
            f"L={L}: {f.values['train_peak_mib']:,.0f} MiB, {f.values['train_tokens_per_s']:,.0f} tok/s, "
            f"{f.values['greedy_sentences_per_s']:.1f} / {f.values['beam4_sentences_per_s']:.1f} sent/s"
            for L, f in base.items()
        )
    )


def print_bound(length: int, b: dict[str, Any]) -> None:
    share = b["share_of_bound"]
    print(
        f"  hard retrieval, L={length}, beam {b['beam']}: the attention cores take "
        f"{100 * b['attention_share']:.1f} % of soft decoding; without the weighted sum it "
        f"would be {b['bound_speedup']:.3f}x as fast, with hard retrieval it is "
        f"{b['hard_speedup']:.3f}x: "
        + ("n/a" if share is None else f"{100 * share:.0f} %")
        + f" of the bound (whole decodings by the clock: {b['hard_speedup_clock']:.3f}x); "
        + "the argmax alone, which every retrieval does, leaves "
        + ("n/a" if b["ceiling"] is None else f"{100 * b['ceiling']:.0f} %")
        + " of it to reach"
    )
    for way, top in b["top"].items():
        print(f"    profile {way} (ms): " + ", ".join(f"{k} {ms:.0f}" for k, ms in top.items()))


def missed(group: str, table: cost.CostTable) -> list[str]:
    out = []
    for name in TARGETS.get(group, ()):
        for L in table.figures[name]:
            r = {f: table.ratio(name, L, f) for f in cost.FIGURES}
            if r["train_peak_mib"] > 1.0:
                out.append(f"{name} L={L}: memory {r['train_peak_mib']:.2f}x")
            for f in cost.FIGURES[1:]:
                if r[f] < 1.0:
                    out.append(f"{name} L={L}: {f} {r[f]:.2f}x")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="sweep,iwslt")
    ap.add_argument("--groups", default=",".join(GROUPS))
    ap.add_argument("--lengths", default="16,64,256")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sentences", type=int, default=16)
    ap.add_argument("--batch-tokens", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-bound", action="store_true", help="skip the hard-retrieval bound")
    ap.add_argument("--json", type=Path, help="write every figure and ratio here")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    lengths = tuple(int(x) for x in args.lengths.split(","))
    workload = cost.Workload(
        lengths=lengths,
        batch_tokens=args.batch_tokens,
        sentences=args.sentences,
        rounds=args.rounds,
        threads=args.threads,
    )
    torch.set_num_threads(args.threads)
    say = print if args.verbose else None
    result: dict[str, Any] = {"sizes": {}, "bound": {}, "missed": []}
    for size in args.sizes.split(","):
        make = {"sweep": sweep_candidates, "iwslt": iwslt_candidates}[size]
        for group in args.groups.split(","):
            candidates = make(group)
            table = cost.measure(candidates, GROUPS[group][0], workload, say)
            result["sizes"].setdefault(size, {})[group] = table.to_json()
            print_table(f"{group} at the {size} size", table)
            result["missed"] += [f"{size} {m}" for m in missed(group, table)]
            sys.stdout.flush()
            if group == "xu2020" and not args.no_bound and size == "iwslt":
                base = next(c for c in candidates if c.name == "BASE")
                result["bound"][size] = {}
                for L in lengths:
                    for beam in (1, workload.beam):
                        b = bound(base, L, args.sentences, args.rounds, beam)
                        result["bound"][size][f"{L} beam {beam}"] = b
                        print_bound(L, b)
    result["machine"] = cost.machine("cpu", args.threads)
    print("\ntargets missed: " + ("; ".join(result["missed"]) or "none"))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
