"""The one recipe every system of the peer benchmark trains with, read from an ADL preset.

ADL's preset (``small_cpu`` in the benchmark) is the source of truth: the peers get the same
model sizes, batch, peak learning rate, warm-up, Adam betas, label smoothing, gradient
clipping, length filter, output-length limit, validation interval and best-checkpoint
metric, written in each toolkit's own terms (``systems.py``, ``sockeye_system.py``,
``fairseq_system.py``). The recipe search (``tune.py``) changes the fields of ``TUNABLE``
per system; ``with_settings`` makes such a variant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from adl.runtime.config import Config
from adl.runtime.run.configure import configure

ARCH = ("architectures/transformer.enc.adl", "architectures/transformer.dec.adl")

# recipe field -> ADL's setting: what a recipe search may change, and how ADL is told
TUNABLE = {
    "dropout": "model.dropout",
    "lr": "optim.lr",
    "label_smoothing": "optim.label_smoothing",
    "warmup": "schedule.warmup",
    "clip_norm": "optim.clip_norm",
    "max_tokens": "train.max_tokens",
}


@dataclass(frozen=True)
class Recipe:
    preset: str  # the ADL preset the recipe comes from
    sets: tuple[str, ...]  # --set items over the preset (given to ADL as they are)
    d_model: int  # model size (embeddings, attention, residual stream)
    layers: int  # encoder blocks = decoder blocks
    ffn: int  # feed-forward inner size (ADL's ffl: 4 x d_model)
    heads: int  # attention heads
    dropout: float  # every dropout (attention, activation, residual, embedding)
    vocab: int  # pieces of the one joint sentencepiece model
    max_tokens: int  # batch size in tokens (sentences x longest side, with eos)
    lr: float  # the peak learning rate, reached at the end of the warm-up
    warmup: int  # updates of linear warm-up from 0, then lr * sqrt(warmup / step)
    betas: tuple[float, float]  # Adam's betas
    eps: float  # Adam's epsilon
    label_smoothing: float  # epsilon of label smoothing
    clip_norm: float  # clip the gradient's global norm to this (0: none)
    max_len: int  # training pairs with more pieces than this on a side are dropped (0: keep)
    max_ratio: float  # ... and pairs whose piece ratio is above this (0: keep)
    valid_every: int  # updates between validations (and checkpoints)
    valid_max: int  # validation sentences used (0: all)
    valid_sample: int  # the validation sentences decoded for BLEU / chrF (0: all)
    best_metric: str  # checkpoints (and averages) are chosen by: bleu | chrf
    average_last: int  # averages of the last 2..N checkpoints may become the model tested
    len_a: float  # translations are at most len_a x source pieces + len_b pieces
    len_b: int  # (see len_a)
    seed: int  # seeds weights and batch order

    @property
    def sockeye_initial_lr(self) -> float:
        """Sockeye's inv-sqrt-decay rate is ``initial_lr / sqrt(max(t, warmup))`` after a
        linear warm-up, so its peak is ``initial_lr / sqrt(warmup)``: this initial rate gives
        the same peak (and the same curve) as ours."""
        return self.lr * max(self.warmup, 1) ** 0.5

    def adl_sets(self) -> list[str]:
        """ADL's ``--set`` items for the fields a recipe search changes, and the seed."""
        items = [f"{key}={getattr(self, name)!r}" for name, key in TUNABLE.items()]
        return [*items, f"train.seed={self.seed}"]

    def to_dict(self) -> dict:
        return asdict(self)


def with_settings(recipe: Recipe, settings: Mapping[str, float]) -> Recipe:
    """``recipe`` with some of its ``TUNABLE`` fields changed (a recipe search's cell)."""
    unknown = sorted(set(settings) - set(TUNABLE))
    if unknown:
        raise ValueError(
            f"cannot tune {', '.join(unknown)}: the recipe search changes {', '.join(TUNABLE)}"
        )
    typed = {k: type(getattr(recipe, k))(v) for k, v in settings.items()}
    return dataclasses.replace(recipe, **typed)


def from_config(config: Config, preset: str, sets: Sequence[str] = ()) -> Recipe:
    """The recipe of an effective ADL configuration (checked against what the peers can do)."""
    m, d, o, s, t = config.model, config.data, config.optim, config.schedule, config.train
    problems = []
    if s.kind != "inverse_sqrt":
        problems.append(f"schedule.kind={s.kind} (the peers are given inverse_sqrt)")
    if s.warmup_init:
        problems.append("schedule.warmup_init (the peers warm up from 0)")
    if not (d.joint_vocab and m.share_embeddings and m.tie_embeddings):
        problems.append("a vocabulary that is not joint, shared and tied")
    if t.accumulate != 1:
        problems.append("train.accumulate (not given to the peers)")
    if o.optimizer != "adam" or o.weight_decay:
        problems.append("an optimizer other than plain Adam")
    if t.best_metric not in ("bleu", "chrf") or not t.bleu:
        problems.append(
            f"train.best_metric={t.best_metric} (every system's checkpoints are chosen by the "
            "BLEU or chrF of their greedy translations of the validation sample: use bleu or chrf)"
        )
    if problems:
        raise ValueError(
            f"preset {preset}: the peer benchmark cannot give the peers " + "; ".join(problems)
        )
    return Recipe(
        preset=preset,
        sets=tuple(sets),
        d_model=m.d_model,
        layers=int(m.vars.get("layers", 6)),
        ffn=4 * m.d_model,
        heads=m.heads,
        dropout=m.dropout,
        vocab=d.vocab_size,
        max_tokens=t.max_tokens,
        lr=o.lr,
        warmup=s.warmup,
        betas=(float(o.betas[0]), float(o.betas[1])),
        eps=o.eps,
        label_smoothing=o.label_smoothing,
        clip_norm=o.clip_norm,
        max_len=d.max_len,
        max_ratio=d.max_ratio,
        valid_every=t.valid_every,
        valid_max=d.valid_max,
        valid_sample=t.valid_bleu_sentences,
        best_metric=t.best_metric,
        average_last=t.average_last,
        len_a=t.decode_len_a,
        len_b=t.decode_len_b,
        seed=t.seed,
    )


def load(preset: str = "demo", sets: Sequence[str] = (), root: str = ".") -> Recipe:
    """The recipe of ``preset`` with ``--set`` items, as ``adl train`` would read it."""
    from pathlib import Path

    files = [str(Path(root) / f) for f in ARCH]
    return from_config(configure(files, preset=preset, sets=list(sets)), preset, sets)
