"""The cost of an architecture, measured one way: the instrument of ``adl sweep``'s cost
columns and of bench/hardcoded.py.

Three figures per model and sentence length L, on a synthetic workload that depends on the
architecture only (random tokens, every sentence L tokens on both sides, no padding):

- **training peak memory** (MiB): the most bytes of tensors alive at once during a training
  update: the parameters, their gradients, Adam's two moments, the batch, the activations
  the forward pass keeps for the backward pass and the temporaries of every operation. On a
  CPU they are counted by a dispatch mode that sees every tensor an operation makes
  (:class:`LiveTensors`), on a GPU by torch's allocator (``torch.cuda.max_memory_allocated``
  above what it held before the model). Kernels' private workspace and the allocator's
  caching are left out: they are not the model's, and the resident memory that includes
  them varied by ±3 % between identical runs here. That resident memory (``VmHWM`` of a
  fresh process above what it held before the model was built) is recorded beside it as
  ``train_rss_mib``;
- **training tokens/s**: target tokens of a batch of about ``batch_tokens`` over the median
  time of ``train_steps`` updates (forward, backward, Adam), after one warm-up update;
  with one CPU thread the time is the process's CPU time (:func:`timer`), so that other work
  on a shared machine does not count, else the wall clock;
- **decoding sentences/s**: ``sentences`` sources of L tokens, each decoded to exactly L
  tokens (eos barred, so that every model does the same number of steps whatever it learned),
  greedy and with beam 4, through the runtime's search (the same clock).

Each measurement (a model's training and decoding figures at one length, in one round) runs
in a fresh process that builds the model anew, so that no model keeps one build's luck
through every round, as it did when one process decoded every round. The speeds still vary
from round to round on a shared virtual machine, by 15% and more: every round is kept in the
cost file, and the sweep's table says how far its rounds lie from their median; in the
sweeps' committed tables the recipe controls, each the baseline's own model when it decodes,
come out at 0.95-1.09x of it.

Every model is measured against a baseline in the same run, the models taking turns
(``rounds`` times, in a rotating order), and each figure is reported with its ratio to the
baseline's: a machine that is slower, or busy with other work, slows every model alike,
so the ratios hold where the absolute figures do not. This is also why the training runs of a
sweep, which train side by side and record their own throughput, are not the cost columns:
those figures depend on what else ran beside them; these do not.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FIGURES = (
    "train_peak_mib",
    "train_tokens_per_s",
    "greedy_sentences_per_s",
    "beam4_sentences_per_s",
)
LOWER_IS_BETTER = ("train_peak_mib",)
RECORDED = ("train_rss_mib",)  # measured too (on a CPU), no ratio
# The way of measuring, counted in the sweeps' cost hashes: raised when it changes (2: each
# round's decoding in the probe's fresh process, where one process decoded every round), so
# that cost files of an older instrument are measured again.
INSTRUMENT = 2


@dataclass(frozen=True)
class Candidate:
    """A model to measure: a run's model settings (the fields of
    :class:`~adl.runtime.config.ModelConfig`: files, sizes, $variables), its vocabulary size
    (both sides), the length ratio hard-coded cross attention centres on, and how its decoder
    attends in decoding (``soft`` | ``hard``, Xu et al.'s Table 4; None: as written)."""

    name: str
    model: dict[str, Any]
    vocab: int = 8000
    length_ratio: float = 1.0
    decode_attention: str | None = None

    @classmethod
    def of(cls, name: str, files: Sequence[str | Path], config: Any, **options: Any) -> Candidate:
        """The model of a run configuration (:class:`~adl.runtime.config.Config`) with
        these .adl files (ENC DEC, one MODEL, or one JOINT)."""
        from adl.runtime.model.build import assign_files

        model = {k: v for k, v in asdict(config.model).items() if v is not None}
        model.update(assign_files([str(f) for f in files]))
        return cls(name, model, config.data.vocab_size, **options)


@dataclass(frozen=True)
class Workload:
    lengths: tuple[int, ...] = (16, 64, 256)  # sentence lengths, both sides
    batch_tokens: int = 4000  # target tokens of a training batch (rows = batch_tokens // L)
    train_steps: int = 3  # timed updates per measurement (after one warm-up update)
    sentences: int = 16  # sentences decoded per measurement
    beam: int = 4  # the beam of the beam-search figure
    rounds: int = 3  # turns each model takes, in a rotating order
    threads: int = 0  # CPU threads (0: the CPUs this process may use)
    device: str = "cpu"


@dataclass
class Measured:
    """One model's figures at one length: the median over rounds, and every round."""

    values: dict[str, float]
    rounds: dict[str, list[float]]


@dataclass
class CostTable:
    baseline: str
    workload: Workload
    machine: dict[str, Any]
    params: dict[str, int]  # model -> parameters
    figures: dict[str, dict[int, Measured]]  # model -> length -> figures

    def ratio(self, model: str, length: int, figure: str) -> float:
        """The model's figure over the baseline's (memory: below 1 is less; speeds: above
        1 is faster)."""
        base = self.figures[self.baseline][length].values[figure]
        return self.figures[model][length].values[figure] / base

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "workload": asdict(self.workload),
            "machine": self.machine,
            "params": self.params,
            "figures": {
                m: {str(L): {"median": f.values, "rounds": f.rounds} for L, f in by.items()}
                for m, by in self.figures.items()
            },
            "ratios": {
                m: {
                    str(L): {fig: self.ratio(m, L, fig) for fig in FIGURES} for L in self.figures[m]
                }
                for m in self.figures
            },
        }


def machine(device: str, threads: int) -> dict[str, Any]:
    """What the figures were measured on."""
    import platform

    import torch

    cpu = platform.processor() or platform.machine()
    try:
        found = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        cpu = found.group(1).strip() if found else cpu
    except OSError:
        pass
    info: dict[str, Any] = {"cpu": cpu, "threads": threads, "torch": torch.__version__}
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def timer(threads: int, device: str) -> Callable[[], float]:
    """The clock of the measurements: with one CPU thread, the process's CPU time, so that
    whatever else the machine runs meanwhile does not count; else the wall clock."""
    if threads == 1 and not device.startswith("cuda"):
        return time.process_time
    return time.perf_counter


def cpu_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# --- one measurement, in a fresh process ------------------------------------------------------
def probe(candidate: Candidate, length: int, workload: Workload) -> dict[str, float]:
    """Train ``candidate`` for a few updates at ``length``, then decode with it, in a fresh
    Python process: {"train_peak_mib", "train_tokens_per_s", "greedy_sentences_per_s",
    "beam4_sentences_per_s", "params"} (and "train_rss_mib" on a CPU)."""
    request = {"candidate": asdict(candidate), "length": length, "workload": asdict(workload)}
    done = subprocess.run(
        [sys.executable, "-m", "adl.runtime.cost", json.dumps(request)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"measuring {candidate.name} at length {length} failed:\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rss_kib(field_name: str) -> int:
    found = re.search(rf"{field_name}:\s+(\d+)", Path("/proc/self/status").read_text())
    if not found:
        raise OSError(f"no {field_name} in /proc/self/status")
    return int(found.group(1))


def model_of(candidate: Candidate, device: str):
    """The candidate's model (random weights) on ``device``, the way a run builds it."""
    from adl.nn.hard import set_decode_attention
    from adl.runtime.config import ModelConfig
    from adl.runtime.model.build import build_model
    from adl.runtime.training.distributed import pick_device

    cfg = ModelConfig(**candidate.model)
    model = build_model(cfg, candidate.vocab, candidate.vocab, candidate.length_ratio)
    set_decode_attention(model, candidate.decode_attention)
    return model.to(pick_device(device))


def synthetic(model, rows: int, length: int, device, generator) -> tuple:
    """(src, tgt, src_words): random tokens of ``length`` (ids from 4: no pad, bos, eos or
    unk), each source token a word of its own (the word ids for a model that reads them,
    else None)."""
    import torch

    vocab = min(model.spec.src_vocab, model.spec.tgt_vocab)
    src = torch.randint(4, vocab, (rows, length), generator=generator).to(device)
    tgt = torch.randint(4, vocab, (rows, length + 1), generator=generator).to(device)
    words = torch.arange(length, device=device).expand(rows, length).contiguous()
    return src, tgt, (words if model.needs_src_words else None)


class LiveTensors:
    """Counts the bytes of the tensors alive while it is on (a torch dispatch mode sees every
    tensor an operation makes, forward, backward and the optimizer's): its ``peak`` is what
    a CPU training step holds, as ``torch.cuda.max_memory_allocated`` tells it on a GPU,
    the same from run to run (the resident memory of identical runs varied by ±3 %)."""

    def __init__(self, tensors: Iterable[Any] = ()):
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                counter.sweep()
                counter.add(out)
                return out

        self.mode = Mode()
        self.live: dict[int, tuple[Any, int]] = {}  # storage -> (weak reference, bytes)
        self.now = self.peak = 0
        self.add(list(tensors))

    def add(self, found: Any) -> None:
        import torch
        from torch.multiprocessing.reductions import StorageWeakRef
        from torch.utils._pytree import tree_leaves

        for t in tree_leaves(found):
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                ref = StorageWeakRef(storage)
                if ref.cdata not in self.live:
                    self.live[ref.cdata] = (ref, storage.nbytes())
                    self.now += storage.nbytes()
        self.peak = max(self.peak, self.now)

    def sweep(self) -> None:
        for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            self.now -= self.live.pop(key)[1]

    def __enter__(self) -> LiveTensors:
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mode.__exit__(*exc)


def _probe_here(request: dict[str, Any]) -> dict[str, float]:
    """The body of :func:`probe` (run as ``python -m adl.runtime.cost REQUEST``)."""
    import torch

    from adl.runtime.training.distributed import pick_device

    candidate = Candidate(**request["candidate"])
    workload = Workload(**{**request["workload"], "lengths": tuple(request["workload"]["lengths"])})
    length = int(request["length"])
    threads = workload.threads or cpu_threads()
    torch.set_num_threads(threads)
    clock = timer(threads, workload.device)
    device = pick_device(workload.device)
    rows = max(1, workload.batch_tokens // length)
    torch.manual_seed(0)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
    else:
        Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts here
        before = _rss_kib("VmRSS") * 1024
    model = model_of(candidate, workload.device).train()
    opt = torch.optim.Adam(model.parameters(), 1e-4)
    src, tgt, words = synthetic(model, rows, length, device, torch.Generator().manual_seed(0))

    def update() -> None:
        logits = model(src, tgt[:, :-1], words)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize(device)

    times = []
    for step in range(workload.train_steps + 1):  # the first is the warm-up
        started = clock()
        update()
        if step:
            times.append(clock() - started)
    figures = {
        "train_tokens_per_s": rows * length / statistics.median(times),
        "params": sum(p.numel() for p in model.parameters()),
    }
    if cuda:
        figures["train_peak_mib"] = (torch.cuda.max_memory_allocated(device) - before) / 2**20
    else:
        figures["train_rss_mib"] = (_rss_kib("VmHWM") * 1024 - before) / 2**20
        state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
        held = [*model.parameters(), *model.buffers(), *state, src, tgt]
        with LiveTensors(held if words is None else [*held, words]) as live:
            update()  # one more update, every tensor counted
        figures["train_peak_mib"] = live.peak / 2**20
    return {**figures, **_decode_here(model.eval(), length, workload, clock)}


def _decode_here(model, length: int, workload: Workload, clock) -> dict[str, float]:
    """Decoding sentences/s of ``model``, greedy and with ``workload.beam``, after a
    warm-up of a few steps at full width (the first calls allocate)."""
    import torch

    device = next(model.parameters()).device
    src, _, words = synthetic(
        model, workload.sentences, length, device, torch.Generator().manual_seed(1)
    )
    model = _NoEos(model)
    figures = {}
    for beam, figure in ((1, FIGURES[2]), (workload.beam, FIGURES[3])):
        decode_seconds(model, src, words, beam, min(3, length))
        seconds = decode_seconds(model, src, words, beam, length, clock)
        figures[figure] = workload.sentences / seconds
    return figures


# --- decoding, in this process ----------------------------------------------------------------
class _NoEos:
    """A model whose decoder never ends a sentence: every search runs its full length."""

    def __init__(self, model):
        self.model = model
        self.needs_src_words = model.needs_src_words
        self.can_share_source = getattr(model, "can_share_source", lambda: False)

    def start(self, src, src_words=None):
        return self.model.start(src, src_words)

    def step(self, tokens, memory, state):
        from adl.runtime.data.tokenizer import EOS

        logp = self.model.step(tokens, memory, state)
        logp[:, EOS] = float("-inf")
        return logp


def decode_seconds(
    model, src, words, beam: int, length: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Seconds to decode ``src`` to ``length`` tokens each, greedy (beam 1) or beam search,
    by ``clock``."""
    import torch

    from adl.runtime.decode.search import beam as beam_search
    from adl.runtime.decode.search import greedy

    started = clock()
    with torch.no_grad():
        if beam == 1:
            greedy(model, src, words, max_len=length)
        else:
            beam_search(model, src, beam, words, max_len=length)
    if src.device.type == "cuda":
        torch.cuda.synchronize(src.device)
    return clock() - started


# --- the comparison ---------------------------------------------------------------------------
def measure(
    candidates: Sequence[Candidate],
    baseline: str,
    workload: Workload = Workload(),
    say: Callable[[str], object] | None = None,
) -> CostTable:
    """Every candidate's figures at every length, against ``baseline`` (one of them), the
    candidates taking turns ``workload.rounds`` times in a rotating order."""
    names = [c.name for c in candidates]
    if baseline not in names:
        raise ValueError(f"the baseline {baseline!r} is not among the models {names}")
    threads = workload.threads or cpu_threads()
    clock = timer(threads, workload.device)  # the probes' clock, named in the table
    say = say or (lambda line: None)
    rounds: dict[str, dict[int, dict[str, list[float]]]] = {
        n: {L: {f: [] for f in (*FIGURES, *RECORDED)} for L in workload.lengths} for n in names
    }
    params: dict[str, int] = {}
    for r in range(workload.rounds):  # a fresh process per measurement
        for L in workload.lengths:
            for c in _rotated(candidates, r):
                found = probe(c, L, workload)
                params[c.name] = int(found["params"])
                for f in (*FIGURES, *RECORDED):
                    if f in found:
                        rounds[c.name][L][f].append(found[f])
                say(
                    f"round {r + 1}, length {L}, {c.name}: training "
                    f"{found['train_tokens_per_s']:,.0f} tokens/s, {found['train_peak_mib']:,.0f} MiB; "
                    f"decoding {found[FIGURES[2]]:,.1f} sentences/s greedy, "
                    f"{found[FIGURES[3]]:,.1f} beam {workload.beam}"
                )
    figures = {
        n: {
            L: Measured({f: statistics.median(v) for f, v in by.items() if v}, by)
            for L, by in rounds[n].items()
        }
        for n in names
    }
    info = {**machine(workload.device, threads), "clock": clock.__name__}
    return CostTable(baseline, workload, info, params, figures)


def _rotated(items: Sequence[Candidate], r: int) -> list[Candidate]:
    k = r % len(items)
    return list(items[k:]) + list(items[:k])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m adl.runtime.cost REQUEST``: one measurement (JSON in, JSON out)."""
    args = list(sys.argv[1:] if argv is None else argv)
    print(json.dumps(_probe_here(json.loads(args[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
