"""A decoding step compiled with ``torch.compile`` over a static cache.

:class:`CompiledStep` has a model's incremental interface (``start`` / ``step``, as
:class:`~adl.runtime.decode.search.FullRecompute` has), so greedy and beam search run it
unchanged. Its state is static (:meth:`adl.nn.context.DecodeState.make_static`): the
self-attention layers keep their keys and values in buffers of a fixed number of positions
(the batch's longest translation, rounded up to :data:`BUCKET`), written in place at the
step's position, which is a tensor; a sinusoidal position layer reads its row of a table.
The first step of a batch, which makes the buffers and projects the source, runs eagerly.

Two kinds of graph, by mode. ``reduce-overhead`` and ``max-autotune`` replay CUDA graphs on
a GPU, which need one shape for every step: each step attends to the whole buffers with
the positions not yet written masked, and reads no changing Python number; the buffers'
addresses are marked static, so that the graphs may write them in place, and each step
tells the graphs that the last step's outputs are used up (a GPU has yet to run it:
``python bench/cuda_check.py --compiled reduce-overhead`` checks its translations there).
The other modes compile with dynamic shapes (``dynamic=True``: the rows, which fall as
sentences finish, and the positions written so far are symbolic sizes) and attend to the
positions written so far; a cache reorder copies only those, and a beam's hypotheses
share their sentence's source row (:meth:`CompiledStep.can_share_source`, as the eager
model's do). Attending to whole buffers (about twice a translation's length), copying them
whole at every reorder, a copy of the source a hypothesis, and a power, a sine and a cosine
a row at every step (where a sinusoid is now a row of a table) are what made the compiled
step slower than the eager one on this machine's CPU before
(docs/results/bench/inference_demo_compiled.json: 0.87x greedy, 0.88x at beam 4);
``bench/inference.py --compiled default`` measures the two.

``adl.load_model(run, compiled="default")`` decodes through it (``compiled`` is the
``torch.compile`` mode: ``default``, ``reduce-overhead`` or ``max-autotune``). The
translations are those of the eager search (tests/runtime/test_compiled_decode.py compares
them). The layers it takes are those whose step reads nothing but the cache: dot-product
self-attention without a window (soft or hard), source attention, positions, feed-forward,
norms and the structure around them; a model with another layer kind in its decoder is
refused by name.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.fx.experimental import _config as fx_config

from adl.errors import InputError
from adl.nn.attention import MLPSourceAttention, SelfAttention, SourceAttention
from adl.nn.base import Chain, Layer
from adl.nn.basic import (
    Activation,
    DropoutLayer,
    FeedForward,
    FeedForwardBlock,
    Identity,
    Linear,
    Norm,
)
from adl.nn.context import DecodeState, Memory
from adl.nn.model import Seq2Seq
from adl.nn.position import LearnedPositions, SinusoidalPositions, learned_limit
from adl.nn.structure import (
    Concat,
    Highway,
    PreNormResidual,
    Repeat,
    Residual,
    ResidualDropout,
)
from adl.runtime.errors import ConfigError
from adl.runtime.search_options import SearchOptions

# the decoder layers whose step reads only the static cache (their own state, if any, is
# a self-attention's keys and values or what was computed from the source)
SUPPORTED: tuple[type[Layer], ...] = (
    Chain,
    Repeat,
    Residual,
    ResidualDropout,
    PreNormResidual,
    Highway,
    Concat,
    DropoutLayer,
    Identity,
    Linear,
    FeedForward,
    FeedForwardBlock,
    Activation,
    Norm,
    SinusoidalPositions,
    LearnedPositions,
    SelfAttention,
    SourceAttention,
    MLPSourceAttention,
)

# a static cache holds a multiple of this many positions: batches whose longest translation
# differs by less share their shapes (and a CUDA graph)
BUCKET = 16

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CUDA_GRAPHS = ("reduce-overhead", "max-autotune")  # the modes that replay CUDA graphs on a GPU


def unsupported(model: Any) -> list[str]:
    """Why ``model`` cannot decode through a compiled step: one line per reason (empty when
    it can)."""
    if not isinstance(model, Seq2Seq):
        return [f"a {type(model).__name__} (only an encoder-decoder model compiles its step)"]
    found = []
    for module in model.decoder.modules():
        if not isinstance(module, Layer):
            continue
        where = getattr(module, "position", type(module).__name__)
        if not isinstance(module, SUPPORTED):
            found.append(f"{where}: its decoding step keeps state of its own")
        elif isinstance(module, SelfAttention) and module.window is not None:
            found.append(f"{where}: a window keeps only its last keys")
    return found


def compile_failures() -> tuple[type[Exception], ...]:
    """What torch.compile raises when it cannot build a graph's code (its C++ compiler
    failing, on a CPU: CppCompileError, which dynamo and inductor wrap)."""
    from torch._dynamo.exc import BackendCompilerFailed
    from torch._inductor.exc import CppCompileError, InductorError

    return (BackendCompilerFailed, InductorError, CppCompileError)


class CompiledStep:
    """``model``'s decoding step, compiled over a static cache (the module's docstring).

    ``mode``: the ``torch.compile`` mode (:data:`MODES`). Before a search, :meth:`plan`
    sets how long its translations may be (the search's ``len_a``, ``len_b`` and cap), which
    sizes each batch's cache."""

    def __init__(self, model: Any, mode: str = "default"):
        why = unsupported(model)
        if why:
            raise ConfigError(
                "this model cannot decode through a compiled step:\n  " + "\n  ".join(why)
            )
        if mode not in MODES:
            raise ConfigError(f"compiled must be one of {', '.join(MODES)}, not {mode!r}")
        self.model = model
        self.mode = mode
        self.needs_src_words = model.needs_src_words
        self.limit = learned_limit(model.decoder)  # learn_pos's target positions
        self.dtype = next(model.parameters()).dtype
        defaults = SearchOptions()  # until plan() says otherwise
        self.lengths: tuple[float, int, int | None] = (defaults.len_a, defaults.len_b, None)
        # CUDA graphs replay one shape: whole buffers; else the written positions, dynamic
        self.whole = mode in CUDA_GRAPHS
        self.compiled = torch.compile(
            self.next_logp, mode=mode, dynamic=None if self.whole else True
        )

    def can_share_source(self) -> bool:
        """Whether a beam's hypotheses may share their sentence's source row: the model's
        answer (:meth:`adl.nn.model.Seq2Seq.can_share_source`)."""
        return self.model.can_share_source()

    def plan(self, len_a: float, len_b: int, cap: int | None) -> None:
        """The next searches' length rule: at most ``len_a`` x source length + ``len_b``
        tokens, and at most ``cap``."""
        self.lengths = (len_a, len_b, cap)

    def capacity(self, source_width: int) -> int:
        """Cache positions for a batch whose widest source row is ``source_width`` tokens
        (its eos included): the search's steps at most (the longest translation and the step
        that may add its eos, with one to spare against rounding), rounded up to
        :data:`BUCKET`."""
        len_a, len_b, cap = self.lengths
        longest = int((source_width - 1) * len_a + len_b) + 1
        if cap is not None:
            longest = min(longest, cap)
        steps = max(longest, 1) + 1
        return -(-steps // BUCKET) * BUCKET

    def next_logp(self, tokens: Tensor, memory: Memory, state: DecodeState) -> Tensor:
        """Log-probabilities (B, V) of the next token after ``tokens`` (B,); the state not
        advanced (the graph :attr:`compiled` is made of this)."""
        return self.model.logits(tokens.unsqueeze(1), memory, state)[:, -1].log_softmax(-1)

    def start(self, src: Tensor, src_words: Tensor | None = None) -> tuple[Memory, DecodeState]:
        memory, state = self.model.start(src, src_words)
        state.make_static(self.capacity(src.size(1)), src.device, whole=self.whole)
        # the source's additive mask, made before any graph reads it: a graph guards on the
        # masks a memory holds, and one made inside it would be another graph's condition
        memory.additive(self.dtype)
        return memory, state

    def step(self, tokens: Tensor, memory: Memory, state: DecodeState) -> Tensor:
        assert state.capacity is not None  # made by start
        if state.offset >= state.capacity:
            raise InputError(
                f"a compiled decoding step holds {state.capacity} positions; this search "
                f"takes more (is the cap of plan() below the search's max_len?)",
                limit=state.capacity,
                length=state.offset + 1,
            )
        if self.limit is not None and state.offset >= self.limit:
            raise InputError(
                f"learn_pos(max_seq_len={self.limit}) embeds sequences of at most "
                f"{self.limit} positions; this translation has {state.offset + 1}",
                limit=self.limit,
                length=state.offset + 1,
            )
        # the first step makes the cache's buffers and the source's keys and values: eager;
        # so is a step of one sentence (a size of 1 is a graph of its own: torch.compile
        # specialises it, and the batches' last sentences would make a graph each for
        # greedy search and beam search, of at most one sentence's work a step)
        if state.offset == 0 or tokens.size(0) == memory.group:
            logp = self.next_logp(tokens, memory, state)
        else:
            if self.mode in CUDA_GRAPHS:  # the last step's outputs are used up
                torch.compiler.cudagraph_mark_step_begin()
            logp = self.built(tokens, memory, state)
        state.advance(1)
        return logp

    def built(self, tokens: Tensor, memory: Memory, state: DecodeState) -> Tensor:
        """:attr:`compiled`, whose first calls build the step: where torch.compile cannot
        (no C++ compiler, or inductor's code not compiling for this CPU's kernels), a
        :class:`ConfigError` that says so and what to do, not the compiler's trace."""
        # each dynamic size a symbol of its own: torch.compile by default makes sizes that
        # are equal when a graph is made one symbol ("duck" sizing) and guards on their
        # equality, so that a cache's rows equal to the step's tokens, or its positions
        # equal to a table's, made a new graph as soon as they differed (a beam's shared
        # source, the next batch's cache: four graphs where two do). Set by hand, not by
        # the config's patch(): a step's cost, 3 us, not 14
        duck = fx_config.use_duck_shape
        fx_config.use_duck_shape = False
        try:
            return self.compiled(tokens, memory, state)
        except compile_failures() as exc:  # evaluated only when something is raised
            raise ConfigError(
                f"torch.compile could not build the decoding step on this machine "
                f"({compiler_said(exc)}); decode without --compiled (the eager step "
                "translates the same)"
            ) from exc
        finally:
            fx_config.use_duck_shape = duck


def compiler_said(exc: BaseException) -> str:
    """The gist of a compile failure: the innermost of the wrapped errors that torch names
    (a CppCompileError, say), and the first line of its output that says ``error``."""
    inner: BaseException = exc
    chain: BaseException | None = exc
    while chain is not None:
        if isinstance(chain, compile_failures()):
            inner = chain
        chain = chain.__cause__ or getattr(chain, "inner_exception", None)
    lines = [line.strip() for line in str(inner).splitlines() if line.strip()]
    said = lines[0] if lines else ""
    detail = next((line for line in lines[1:] if "error" in line.lower()), None)
    if detail is not None:
        said += ": " + detail.split("error:", 1)[-1].strip()
    return f"{type(inner).__name__}: {said[:300]}"
