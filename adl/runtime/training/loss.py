"""Label-smoothed cross-entropy over the target tokens (padding excluded).

``loss = (1 - ε) · (−log p(y)) + ε · mean_v(−log p(v))`` — the smoothed target puts ε spread
uniformly over the vocabulary (as ``torch.nn.functional.cross_entropy(label_smoothing=ε)``).
The unsmoothed negative log-likelihood comes out of the same pass for the perplexity.
:func:`forward` is the teacher-forced pass whose logits it reads (training and validation).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


def forward(model, batch, needs_words: bool) -> Tensor:
    """The model's logits (B, T, V) of a batch, teacher-forced, with the source's word ids
    where the model reads them (``needs_words``)."""
    if needs_words:
        return model(batch.src, batch.tgt_in, batch.src_words)
    return model(batch.src, batch.tgt_in)


@dataclass
class LossSums:
    loss: Tensor  # () label-smoothed loss, summed over tokens (what is optimised)
    nll: Tensor  # () negative log-likelihood summed over tokens (perplexity)
    tokens: int  # target tokens counted
    correct: Tensor | None  # () tokens whose argmax is the reference (None: not counted)


def token_loss(
    logits: Tensor,
    target: Tensor,
    smoothing: float = 0.0,
    pad_id: int = 0,
    count_correct: bool = True,
) -> LossSums:
    """``logits`` (B, T, V), ``target`` (B, T) -> sums over the non-padding positions.
    ``count_correct=False`` skips the accuracy's argmax over the vocabulary (training logs
    no accuracy; the argmax is about 2 % of a small model's update)."""
    mask = target.ne(pad_id)  # (B, T)
    logp = logits[mask].float().log_softmax(-1)  # (N, V)
    gold = target[mask]  # (N,)
    nll = -logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)  # (N,)
    if smoothing:
        loss = (1.0 - smoothing) * nll - smoothing * logp.mean(-1)
    else:
        loss = nll
    correct = logp.argmax(-1).eq(gold).sum() if count_correct else None
    return LossSums(loss.sum(), nll.sum(), int(gold.numel()), correct)
