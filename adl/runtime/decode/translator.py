"""A trained model ready to use: :class:`Translator` (what ``adl.load_model`` returns and
``adl translate`` runs). In use (docs/runtime.md, "Using a trained model", shows it on a
real run, and its test runs it)::

    t = adl.load_model("runs/tiny")                  # a run, a checkpoint or an export
    t.translate(["a b c"])                           # ["c b a"]
    t.translate(["a b c"], beam=4, nbest=2)          # [[("c b a", -0.01), ...]]
    t.score(["a b c"], ["c b a"])                    # [-0.0123] (log-probabilities)
    t.attention("a b c", "c b a").layers[0].weights  # (heads, queries, keys)
    adl.load_model(["runs/a", "runs/b"])             # an ensemble (adl/runtime/decode/ensemble.py)

Lines longer than the model's positions (``learn_pos(max_seq_len=N)``) are cut to what
fits, with one warning naming the line, its length and the limit; the other lines of the
batch are translated as usual.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from adl.errors import InputError
from adl.runtime.data.tokenizer import BOS, EOS, PAD
from adl.runtime.decode.driver import search_ids
from adl.runtime.decode.hypotheses import Hypothesis
from adl.runtime.decode.search import pad_batch
from adl.runtime.decode.workers import forks_workers, threads_each
from adl.runtime.errors import ConfigError, DataError
from adl.runtime.search_options import SearchOptions

Warn = Callable[[int, str], None]  # (line number, message)


def position_limits(model) -> tuple[int | None, int | None]:
    """The most source and target positions the model embeds (``learn_pos``), or None
    where nothing limits them. A joint model counts positions per side."""
    from adl.nn.position import learned_limit

    if hasattr(model, "members"):  # an ensemble: what every member can take
        limits = [position_limits(m) for m in model.members]
        least = lambda xs: min((x for x in xs if x is not None), default=None)
        return least([s for s, _ in limits]), least([t for _, t in limits])
    if hasattr(model, "encoder"):
        return learned_limit(model.encoder), learned_limit(model.decoder)
    both = learned_limit(model)
    return both, both


@dataclass(frozen=True)
class LayerAttention:
    """The weights one attention layer applied: (heads, queries, keys)."""

    layer: str  # where it is: "decoder 2[1].2.1 mh_dot_src_att"
    kind: str  # "self" or "source"
    weights: torch.Tensor


@dataclass(frozen=True)
class Attention:
    """The attention of every layer on one sentence pair, with the pieces on each axis:
    source attention has target output pieces as rows and source pieces as columns."""

    source: list[str]  # source pieces and "</s>"
    target_in: list[str]  # "<s>" and the target pieces (decoder queries)
    target_out: list[str]  # target pieces and "</s>" (what each query predicts)
    layers: list[LayerAttention]


class Translator:
    """A model and its tokenizers on one device, in eval mode."""

    def __init__(
        self,
        model,
        tokenizers,
        device: str | torch.device = "cpu",
        origin: str = "",
        compiled: str | None = None,
    ):
        """``compiled``: a ``torch.compile`` mode (``default``, ``reduce-overhead``...) to
        decode through a compiled step over a static cache
        (:class:`~adl.runtime.decode.compiled.CompiledStep`), or None (eager)."""
        self.model = model.to(device).eval()
        self.tokenizers = tokenizers
        self.device = torch.device(device)
        self.origin = origin  # what it was loaded from
        self.src_limit, self.tgt_limit = position_limits(model)
        self.steps = None
        if compiled is not None:
            from adl.runtime.decode.compiled import CompiledStep

            self.steps = CompiledStep(self.model, compiled)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        checkpoint: str = "best",
        device: str | torch.device = "cpu",
        decode_attention: str | None = None,
        ensemble_mode: str = "linear",
        int8: str | None = None,
        compiled: str | None = None,
    ) -> Translator:
        """A trained model ready to translate, score and show its attention
        (``adl.load_model`` is this method): from a run directory (``checkpoint``: best |
        last | average | a file name in RUN/checkpoints), a checkpoint file, or a folder
        written by ``adl export``. ``device``: cpu, cuda or cuda:N. ``decode_attention``
        (soft | hard) decodes the decoder's attention that way, whatever it was trained
        with. A list of paths is an ensemble
        (:class:`~adl.runtime.decode.ensemble.Ensemble`): at each step the models'
        distributions are combined (``ensemble_mode``: ``linear``, the average probability,
        or ``log_linear``). ``int8`` (dynamic | weight, on the CPU, the ``quant`` extra)
        decodes with int8 linear layers made by torchao
        (:func:`adl.runtime.decode.quantize.int8`). ``compiled`` (a ``torch.compile`` mode:
        ``default``, ``reduce-overhead``...) decodes through a compiled step
        (:mod:`adl.runtime.decode.compiled`; an encoder-decoder model whose decoder's layers
        it takes).

            t = adl.load_model("runs/tiny")
            t.translate(["a b c"], beam=4)                   # ['c b a']
            adl.load_model(["runs/a", "runs/b"])             # an ensemble of two runs

        (docs/runtime.md, "Using a trained model", runs it on a real run.)

        Nothing is unpickled: checkpoints load with ``torch.load(weights_only=True)``,
        exports from JSON and safetensors."""
        from adl.runtime.decode.ensemble import Ensemble, check_vocabularies

        one = isinstance(path, (str, os.PathLike))
        paths = [Path(path)] if one else [Path(p) for p in path]  # type: ignore[arg-type,union-attr]
        if not paths:
            raise ConfigError("no model to load")
        if int8 is not None and torch.device(device).type != "cpu":
            raise ConfigError(f"int8 decoding runs on the CPU, not on {device}")
        loaded = [_load_one(p, checkpoint, decode_attention) for p in paths]
        if int8 is not None:
            from adl.runtime.decode.quantize import int8 as quantize

            loaded = [(quantize(m, int8, copy=False), t) for m, t in loaded]
        if len(loaded) == 1:
            model, tokenizers = loaded[0]
            return cls(model, tokenizers, device, str(paths[0]), compiled)
        if compiled is not None:
            raise ConfigError("an ensemble decodes eagerly (compiled takes one model)")
        origins = [str(p) for p in paths]
        check_vocabularies([t for _, t in loaded], origins)
        ensemble = Ensemble([m for m, _ in loaded], ensemble_mode)
        return cls(ensemble, loaded[0][1], device, " + ".join(origins))

    def __repr__(self) -> str:
        return f"Translator({self.origin!r}, device={str(self.device)!r})"

    # --- translating ---------------------------------------------------------------------
    def search(
        self,
        lines: Sequence[str],
        options: SearchOptions = SearchOptions(),
        warn: Warn | None = None,
        numbers: Sequence[int] | None = None,
    ) -> list[list[tuple[str, Hypothesis]]]:
        """The ``options.nbest`` best translations of each line (text and hypothesis), in
        order; an empty (or blank) line gets an empty translation. A line longer than the
        model's positions is cut to what fits, and ``warn(number, message)`` is told."""
        numbers = list(numbers) if numbers is not None else list(range(1, len(lines) + 1))
        warn = warn or _warn
        ids = [
            x if line.strip() else []
            for line, x in zip(lines, self.tokenizers.encode_src(list(lines)))
        ]
        if self.src_limit is not None:
            fits = self.src_limit - 1  # the eos takes a position
            for i, x in enumerate(ids):
                if len(x) > fits:
                    warn(
                        numbers[i],
                        f"{len(x):,} tokens, more than the model's {fits:,} source positions "
                        f"(learn_pos(max_seq_len={self.src_limit})): translating its first "
                        f"{fits:,} tokens",
                    )
                    ids[i] = x[:fits]
        found = self.search_tokens(ids, options, warn, numbers)
        decode = self.tokenizers.decode_tgt
        return [[(decode([h.tokens])[0], h) for h in hyps] for hyps in found]

    def search_tokens(
        self,
        ids: Sequence[Sequence[int]],
        options: SearchOptions = SearchOptions(),
        warn: Warn | None = None,
        numbers: Sequence[int] | None = None,
    ) -> list[list[Hypothesis]]:
        """The best hypotheses of sentences already tokenized (what :meth:`search` does
        after sentencepiece, and what validation during training decodes): the target
        length capped at the model's target positions, a batch that the model refuses
        (InputError) retried line by line."""
        warn = warn or _warn
        numbers = list(numbers) if numbers is not None else list(range(1, len(ids) + 1))
        ids = [list(x) for x in ids]
        groups: list[tuple[list[int], int | None]] = [(list(range(len(ids))), None)]
        if self.tgt_limit is not None:
            cap = self.tgt_limit - 1  # bos + tokens + the step that may add eos
            over = [i for i, x in enumerate(ids) if options.len_a * len(x) + options.len_b > cap]
            if over:
                capped = set(over)
                groups = [([i for i in range(len(ids)) if i not in capped], None), (over, cap)]
        results: list[list[Hypothesis]] = [[] for _ in ids]
        for rows, most in groups:
            if not rows:
                continue
            found = self._run([ids[i] for i in rows], options, most, warn, rows, numbers)
            for i, hyps in zip(rows, found):
                results[i] = hyps
        return results

    def search_ids(self, *args: Any, **kwargs: Any) -> list[list[Hypothesis]]:
        """The previous release's name of :meth:`search_tokens` (the module function
        :func:`~adl.runtime.decode.driver.search_ids` it calls has the name), kept one
        release."""
        warnings.warn(
            "Translator.search_ids is renamed search_tokens; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.search_tokens(*args, **kwargs)

    def _run(self, ids, options, cap, warn, rows, numbers) -> list[list[Hypothesis]]:
        model = self.model
        if self.steps is not None:
            if options.workers > 1 and not forks_workers(
                self.device, threads_each(options.workers)
            ):
                raise ConfigError(
                    f"workers {options.workers}: a compiled step searches several batches at "
                    "once only in forked processes (a CPU, one torch thread a worker: "
                    f"{torch.get_num_threads()} threads here); threads of one process would "
                    "share its graphs and static cache; use workers 1, or as many workers "
                    "as threads"
                )
            model = self.steps
        try:
            return search_ids(model, self.tokenizers, ids, options, self.device, cap=cap)
        except InputError as exc:
            if len(ids) == 1:
                warn(numbers[rows[0]], f"not translated: {exc}")
                return [[Hypothesis([], -math.inf, -math.inf)]]
        out = []
        for i, x in enumerate(ids):  # keep the other lines of the batch
            out += self._run([x], options, cap, warn, [rows[i]], numbers)
        return out

    def translate(
        self, lines: str | Sequence[str], options: SearchOptions | None = None, **settings: Any
    ) -> Any:
        """Translations of ``lines`` (a str: one sentence, one result), searched with
        ``options`` and the :class:`SearchOptions` named in ``settings`` over them
        (``beam=4``, ``nbest=2``, ``len_a=1.2``...; the defaults otherwise). ``nbest`` 1: a
        str per line; more: a list of ``(text, score)`` per line, best first, where the
        score is the log-probability divided by the length penalty (what the beam ranks
        by)."""
        return translations(self, lines, SearchOptions.of(options, **settings))

    # --- scoring -------------------------------------------------------------------------
    @torch.no_grad()
    def score(
        self, sources: Sequence[str], targets: Sequence[str], batch_size: int = 64
    ) -> list[float]:
        """The model's log-probability of each target given its source (teacher forcing:
        the sum over the target's pieces and the final eos of log p(y_t | y_<t, x))."""
        if len(sources) != len(targets):
            raise DataError(f"{len(sources):,} sources but {len(targets):,} targets")
        src_ids = self.tokenizers.encode_src(list(sources))
        tgt_ids = self.tokenizers.encode_tgt(list(targets))
        for n, (s, t) in enumerate(zip(src_ids, tgt_ids), 1):
            for side, ids, limit in (("source", s, self.src_limit), ("target", t, self.tgt_limit)):
                if limit is not None and len(ids) + 1 > limit:
                    raise DataError(
                        f"pair {n}: its {side} has {len(ids) + 1:,} positions, more than the "
                        f"model's {limit:,} (learn_pos)"
                    )
        order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
        out = [0.0] * len(order)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src = pad_batch([src_ids[i] for i in chunk], self.device)
            width = max(len(tgt_ids[i]) for i in chunk) + 1
            tgt_in = torch.full((len(chunk), width), PAD, dtype=torch.long)
            tgt_out = torch.full((len(chunk), width), PAD, dtype=torch.long)
            for row, i in enumerate(chunk):
                y = torch.as_tensor(tgt_ids[i], dtype=torch.long)
                tgt_in[row, 0], tgt_in[row, 1 : len(y) + 1] = BOS, y
                tgt_out[row, : len(y)], tgt_out[row, len(y)] = y, EOS
            tgt_in, tgt_out = tgt_in.to(self.device), tgt_out.to(self.device)
            words = self._words(src)
            logp = self.model(src, tgt_in, words).float().log_softmax(-1)
            picked = logp.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
            sums = picked.masked_fill(tgt_out.eq(PAD), 0.0).sum(1).tolist()
            for i, value in zip(chunk, sums):
                out[i] = value
        return out

    # --- attention -----------------------------------------------------------------------
    @torch.no_grad()
    def attention(self, source: str, target: str | None = None) -> Attention:
        """The attention weights of every attention layer when the model reads ``source``
        and ``target`` (default: its greedy translation of ``source``)."""
        if hasattr(self.model, "members"):
            raise ConfigError(
                "an ensemble has no one attention to show: load one of its models for it"
            )
        src_ids = self.tokenizers.encode_src([source])[0]
        if not src_ids:
            raise DataError("the source sentence is empty")
        if target is None:
            target = self.translate(source, beam=1)  # greedy
        tgt_ids = self.tokenizers.encode_tgt([target])[0]
        src = pad_batch([src_ids], self.device)
        tgt_in = torch.tensor([[BOS, *tgt_ids]], device=self.device)
        records = self.model.attention(src, tgt_in, self._words(src))
        piece = lambda sp, ids: [sp.id_to_piece(int(i)) for i in ids]
        return Attention(
            source=piece(self.tokenizers.src, src_ids) + ["</s>"],
            target_in=["<s>"] + piece(self.tokenizers.tgt, tgt_ids),
            target_out=piece(self.tokenizers.tgt, tgt_ids) + ["</s>"],
            layers=[LayerAttention(r.layer, r.kind, r.weights[0].cpu()) for r in records],
        )

    def _words(self, src: torch.Tensor):
        return (
            self.tokenizers.word_ids(src) if getattr(self.model, "needs_src_words", False) else None
        )


# ``adl.load_model``: the same door as ``Translator.load``, under the API's name
load_model = Translator.load


def _load_one(path: str | Path, checkpoint: str, decode_attention: str | None):
    """(model, tokenizers) of one run, checkpoint or export, on the CPU."""
    from adl.runtime.model.export import is_export, load_export

    if is_export(path):
        return load_export(path, decode_attention=decode_attention)
    from adl.runtime.model.checkpoint import load_for_inference

    return load_for_inference(path, checkpoint, "cpu", decode_attention)


def translations(searcher, lines: str | Sequence[str], options: SearchOptions) -> Any:
    """What ``translate`` returns for ``lines``, found by ``searcher.search`` (a
    :class:`Translator` or another backend with its ``search``)."""
    one = isinstance(lines, str)
    found = searcher.search([lines] if isinstance(lines, str) else list(lines), options)
    out: list = (
        [hyps[0][0] for hyps in found]
        if options.nbest == 1
        else [[(text, h.normalized) for text, h in hyps] for hyps in found]
    )
    return out[0] if one else out


def _warn(number: int, message: str) -> None:
    warnings.warn(f"line {number}: {message}", stacklevel=3)


def translate_stream(
    translator: Translator,
    lines: Iterable[list[tuple[int, str]]],
    write: Callable[[str], None],
    options: SearchOptions,
    warn: Warn | None = None,
    done: Callable[[int], None] | None = None,
) -> int:
    """Translate batches of numbered lines as they come, calling ``write`` with each output
    line (n-best: one line per hypothesis) in input order; returns the lines translated."""
    count = 0
    for batch in lines:
        numbers = [n for n, _ in batch]
        found = translator.search([text for _, text in batch], options, warn, numbers)
        for n, hyps in zip(numbers, found):
            if options.nbest > 1:
                for text, h in hyps:
                    write(f"{n - 1} ||| {text} ||| {h.score:.4f} ||| {h.normalized:.4f}")
            else:
                write(hyps[0][0])
        count += len(batch)
        if done is not None:
            done(len(batch))
    return count
