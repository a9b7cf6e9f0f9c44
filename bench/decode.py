"""Decoding speed: the incremental cache, greedy against beam search, hard retrieval, and
the search without a host read per step against the search before it.

    python bench/decode.py [--sentences 32] [--src-len 20] [--out-len 50] [--d 512]
                           [--parts cache,hard,search,prefix,reorder,bound,shared]
                           [--device cpu|cuda]

In one run, on the same random source sentences (the models are untrained; eos is barred so
every sentence decodes exactly --out-len tokens, the length the comparison is about):
  1. sentences/s of the Transformer (architectures/transformer.*.adl) with greedy search and
     with beam 4, each through the layers' incremental cache and with full recomputation of
     the prefix at every step (runtime.search.FullRecompute); the ratio cache / no cache
     (goal >= 5 at output length 50);
  2. sentences/s of the hard-retrieval decoder (Xu et al. 2020, hard decoder self- and
     cross-attention, architectures/xu2020/prenorm/hard_dec_self_cross.dec.adl) against the standard
     decoder, same sizes, beam 4 (the paper reports 1.43x on a GPU);
  3. sentences/s of the Transformer with greedy search and beam 4 through
     runtime.search (state on the device, the host looks every few steps) and through the
     search before issue 16 (bench/search_reference.py: a host read and Python loops over
     the hypotheses every step); the ratio new / old. The two find the same translations
     (tests/runtime/test_runtime_search_sync.py).
  4. sentences/s of the Transformer with greedy search and beam 4, its self-attention keeping
     the prefix's keys and values in buffers that grow in place (adl.nn.context.Prefix) and
     concatenating them with each step's instead (the cache before: every step copies the
     whole prefix); the ratio growing / concatenating, paired rounds as in 3.
  5. sentences/s of the Transformer with beam 4, each step's reorder of the self-attention
     cache copying only the rows whose hypothesis came from another row (the search keeps
     each hypothesis' best continuation in its row: runtime.search.in_place) and copying
     every row (the reorder before); the ratio, paired rounds as in 3, and the share of rows
     that moved.
  6. hard retrieval against its bound by the clock (for an accelerator, where timing single
     calls would need a synchronisation each): the Transformer decoded with standard
     attention in its decoder (soft), with hard retrieval (hard), with the retrieval's pick
     reduced to the argmax alone (argmax: what every retrieval must do) and to nothing
     (none: the scores computed, no value weighted or picked: the bound of removing the
     weighted sum, bench/hardcoded.py's bound); hard retrieval's saving as a share of the
     bound's, (T_soft - T_hard) / (T_soft - T_none), and the ceiling's,
     (T_soft - T_argmax) / (T_soft - T_none). Greedy and beam 4, the ways taking turns.
  7. sentences/s of the Transformer with beam 4, its hypotheses sharing their sentence's
     source (one row a sentence: adl.nn.context.Memory.shared_by) and each keeping its own
     copy (the search before); the sentences' length limits spread from half --out-len to
     --out-len, so that sentences leave the batch at different steps (where a copy of the
     source moves with each row); the ratio shared / copied, paired rounds as in 3.
Each measurement is the median of --repeat runs, interleaved.
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch

import adl
from adl.runtime.cost import _NoEos as NoEos
from adl.runtime.decode.search import FullRecompute, beam, greedy, pad_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import options, sync  # noqa: E402
from search_reference import beam_reference, greedy_reference  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "architectures"
V = 8000


def build(enc: str, dec: str, d: int, heads: int, device: str = "cpu"):
    torch.manual_seed(0)
    return (
        adl.build(
            ARCH / enc, ARCH / dec, src_vocab=V, tgt_vocab=V, d_model=d, heads=heads, dropout=0.0
        )
        .to(device)
        .eval()
    )


def timed(fn, repeat: int, device: str = "cpu") -> float:
    times = []
    for _ in range(repeat):
        sync(device)
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def interleaved(runs: dict, repeat: int, device: str) -> dict[str, float]:
    """The median seconds of each run, the runs taking turns."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            times[name].append(timed(fn, 1, device))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = options(__doc__, d=512, heads=8, repeat=3, device=True)
    ap.add_argument("--sentences", type=int, default=32)
    ap.add_argument("--src-len", type=int, default=20)
    ap.add_argument("--out-len", type=int, default=50)
    ap.add_argument(
        "--parts", default="cache,hard,search,prefix,reorder", help="which comparisons to run"
    )
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    dev = args.device
    g = torch.Generator().manual_seed(0)
    src = pad_batch(torch.randint(4, V, (args.sentences, args.src_len), generator=g).tolist(), dev)
    n, L = args.sentences, args.out_len
    print(
        f"{n} sentences of {args.src_len} tokens, {L} output tokens each, d={args.d}, "
        f"device {dev}, {torch.get_num_threads()} threads, median of {args.repeat}"
    )

    base = build("transformer.enc.adl", "transformer.dec.adl", args.d, args.heads, dev)
    cached, full = NoEos(base), NoEos(FullRecompute(base))
    with torch.no_grad():
        greedy(cached, src[:2], max_len=5)  # warm up (first calls allocate)
    if "search" in parts:
        search_speed(cached, src, L, args.repeat, dev)
    if "cache" in parts:
        cache_speed(cached, full, src, L, args.repeat)
    if "hard" in parts:
        hard_speed(cached, src, L, args, dev)
    if "prefix" in parts:
        prefix_speed(cached, src, L, args.repeat, dev)
    if "reorder" in parts:
        reorder_speed(cached, src, L, args.repeat, dev)
    if "bound" in parts:
        bound_by_clock(cached, src, L, args.repeat, dev)
    if "shared" in parts:
        shared_speed(base, src, L, args.repeat, dev)


def paired(searches: dict, n: int, repeat: int, dev: str, names=("old", "new")) -> None:
    """Each search's two ways, paired: each round times both (alternating which goes
    first); the ratio is the median of the rounds' ratios (robust to a drifting machine)."""
    with torch.no_grad():
        for name, (old, new) in searches.items():
            t_old, t_new, ratios = [], [], []
            for r in range(repeat):
                pair = (old, new) if r % 2 == 0 else (new, old)
                a, b = (timed(fn, 1, dev) for fn in pair)
                o, w = (a, b) if r % 2 == 0 else (b, a)
                t_old.append(o)
                t_new.append(w)
                ratios.append(o / w)
            so, sn = statistics.median(t_old), statistics.median(t_new)
            print(
                f"  {name:7s} {names[0]} {n / so:8.2f}, {names[1]} {n / sn:8.2f} sentences/s; "
                f"{names[1]} / {names[0]} = {statistics.median(ratios):.2f}x (median of "
                f"{repeat} paired rounds; range {min(ratios):.2f}-{max(ratios):.2f})"
            )


def search_speed(model, src, L: int, repeat: int, dev: str) -> None:
    """Old against new search, paired rounds."""
    n = src.size(0)
    searches = {
        "greedy": (
            lambda: greedy_reference(model, src, max_len=L),
            lambda: greedy(model, src, max_len=L),
        ),
        "beam 4": (
            lambda: beam_reference(model, src, 4, max_len=L),
            lambda: beam(model, src, 4, max_len=L),
        ),
    }
    print("\nTransformer, the search: old (a host read every step) against new (state on")
    print("the device; the host looks every few steps):")
    paired(searches, n, repeat, dev)


class Concatenated:
    """The self-attention cache before adl.nn.context.Prefix: each step's keys and values
    concatenated with the prefix's (a copy of the whole prefix every step)."""

    def __init__(self) -> None:
        self.k = self.v = None

    def append(self, k, v):
        if self.k is not None:
            k, v = torch.cat([self.k, k], 2), torch.cat([self.v, v], 2)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index, in_place: bool = False) -> None:
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)


@contextmanager
def concatenating():
    """Self-attention layers built or run inside keep a Concatenated cache."""
    import adl.nn.attention as attention
    import adl.nn.context as context

    kept = attention.Prefix, context.Prefix
    attention.Prefix = context.Prefix = Concatenated
    try:
        yield
    finally:
        attention.Prefix, context.Prefix = kept


def prefix_speed(model, src, L: int, repeat: int, dev: str) -> None:
    """The growing cache against concatenation, paired rounds."""

    def old(search):
        def run():
            with concatenating():
                search()

        return run

    def new_greedy():
        greedy(model, src, max_len=L)

    def new_beam():
        beam(model, src, 4, max_len=L)

    searches = {"greedy": (old(new_greedy), new_greedy), "beam 4": (old(new_beam), new_beam)}
    print("\nTransformer, the self-attention cache: concatenating each step (the cache")
    print("before) against buffers that grow in place (adl.nn.context.Prefix):")
    paired(searches, src.size(0), repeat, dev, names=("concatenating", "growing"))


class Moves:
    """Counts the rows of the self-attention caches' in-place reorders, and the rows moved;
    ``whole`` makes every reorder copy every row, as before the in-place reorder."""

    def __init__(self) -> None:
        self.rows = self.moved = 0

    @contextmanager
    def counting(self, whole: bool = False):
        import adl.nn.context as context

        original = context.Prefix.reorder

        def reorder(prefix, index, in_place=False):
            if in_place and prefix.k is not None and index.numel() == prefix.k.size(0):
                self.rows += index.numel()
                self.moved += int(index.ne(torch.arange(index.numel())).sum())
            original(prefix, index, in_place and not whole)

        context.Prefix.reorder = reorder
        try:
            yield
        finally:
            context.Prefix.reorder = original


def reorder_speed(model, src, L: int, repeat: int, dev: str) -> None:
    """Beam 4 with the cache reordered in place against whole, paired rounds."""
    moves = Moves()

    def run(whole: bool):
        def search():
            with moves.counting(whole):
                beam(model, src, 4, max_len=L)

        return search

    print("\nTransformer, beam 4, the self-attention cache's reorder at each step: every row")
    print("copied (before) against only the rows whose hypothesis came from another row:")
    paired({"beam 4": (run(True), run(False))}, src.size(0), repeat, dev, ("whole", "in place"))
    print(f"  rows moved: {moves.moved / max(moves.rows, 1):.1%} of the rows reordered")


def shared_speed(base, src, L: int, repeat: int, dev: str) -> None:
    """Beam 4 with the source shared by a sentence's hypotheses against a copy each, paired
    rounds; the sentences leave the batch at different steps."""
    shared, copied = NoEos(base), NoEos(base)
    copied.can_share_source = lambda: False
    limits = torch.linspace(L // 2, L, src.size(0)).long()

    def run(model):
        return lambda: beam(model, src, 4, max_len=limits)

    print("\nTransformer, beam 4, the source: a copy for each hypothesis (before) against one")
    print("row a sentence shared by its hypotheses:")
    paired({"beam 4": (run(copied), run(shared))}, src.size(0), repeat, dev, ("copied", "shared"))


@contextmanager
def picking(way: str):
    """Hard retrieval's pick as itself (hard), the argmax alone, or nothing (the first
    values, no argmax)."""
    from hardcoded import argmax_only, first_values

    import adl.nn.retrieval as retrieval

    kept = retrieval.pick
    retrieval.pick = {"hard": kept, "argmax": argmax_only, "none": first_values}[way]
    try:
        yield
    finally:
        retrieval.pick = kept


def bound_by_clock(model, src, L: int, repeat: int, dev: str) -> None:
    """Soft, hard, argmax-only and no-value decodings of one model, by the clock."""
    from adl.nn.hard import set_decode_attention

    n = src.size(0)

    def way(name: str, size: int):
        def run():
            set_decode_attention(model.model, "soft" if name == "soft" else "hard")
            with picking("hard" if name == "soft" else name):
                if size == 1:
                    greedy(model, src, max_len=L)
                else:
                    beam(model, src, size, max_len=L)

        return run

    print("\nTransformer decoded four ways by the clock (hard retrieval against its bound):")
    with torch.no_grad():
        for size in (1, 4):
            runs = {name: way(name, size) for name in ("soft", "hard", "argmax", "none")}
            way("soft", size)()  # warm up
            t = interleaved(runs, repeat, dev)
            bound = t["soft"] - t["none"]
            share = (t["soft"] - t["hard"]) / bound if bound > 0 else float("nan")
            ceiling = (t["soft"] - t["argmax"]) / bound if bound > 0 else float("nan")
            rates = ", ".join(f"{k} {n / v:.2f}" for k, v in t.items())
            search = "greedy" if size == 1 else f"beam {size}"
            print(f"  {search}: sentences/s {rates}")
            print(
                f"    bound {t['soft'] / t['none']:.3f}x, hard {t['soft'] / t['hard']:.3f}x: "
                f"{100 * share:.0f} % of the bound (ceiling {100 * ceiling:.0f} %)"
            )
    set_decode_attention(model.model, None)


def cache_speed(cached, full, src, L: int, repeat: int) -> None:
    n = src.size(0)
    with torch.no_grad():
        runs = {
            "greedy, cache": lambda: greedy(cached, src, max_len=L),
            "greedy, no cache": lambda: greedy(full, src, max_len=L),
            "beam 4, cache": lambda: beam(cached, src, 4, max_len=L),
            "beam 4, no cache": lambda: beam(full, src, 4, max_len=L),
        }
        seconds = {name: timed(fn, repeat) for name, fn in runs.items()}
    print("\nTransformer, the incremental cache:")
    for name, s in seconds.items():
        print(f"  {name:18s} {n / s:8.2f} sentences/s")
    for search in ("greedy", "beam 4"):
        ratio = seconds[f"{search}, no cache"] / seconds[f"{search}, cache"]
        print(f"  {search}: cache / no cache = {ratio:.1f}x  (goal >= 5x at length {L})")


def hard_speed(cached, src, L: int, args, dev: str) -> None:
    n = src.size(0)
    hard = NoEos(
        build(
            "transformer.enc.adl",
            "xu2020/prenorm/hard_dec_self_cross.dec.adl",
            args.d,
            args.heads,
            dev,
        )
    )
    with torch.no_grad():
        pair = {
            "standard decoder": lambda: beam(cached, src, 4, max_len=L),
            "hard retrieval decoder": lambda: beam(hard, src, 4, max_len=L),
        }
        seconds = interleaved(pair, args.repeat, dev)
    std, hrd = (seconds[k] for k in pair)
    print("\nXu et al. (2020): hard retrieval in decoder self- and cross-attention, beam 4:")
    print(f"  standard decoder        {n / std:8.2f} sentences/s")
    print(f"  hard retrieval decoder  {n / hrd:8.2f} sentences/s")
    print(f"  speed-up {std / hrd:.2f}x  (paper: 1.43x on a GTX 1080 Ti)")


if __name__ == "__main__":
    main()
