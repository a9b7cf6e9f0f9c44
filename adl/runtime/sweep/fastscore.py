"""sacrebleu's corpus BLEU and chrF from summed sentence statistics, many rows at once.

The significance test scores every run on a thousand resampled test sets (significance.py);
sacrebleu computes one score per call in Python. These are the same formulas as sacrebleu
2.x's ``BLEU.compute_bleu`` (smoothing ``exp``, no effective order) and
``CHRF._compute_f_score`` (no eps smoothing), written over arrays, operation by operation in
sacrebleu's order, so the scores agree with sacrebleu's to the last digits
(tests/runtime/test_significance.py checks them on random and real statistics). A metric
with other settings is scored by sacrebleu itself (:func:`scores`).
"""

from __future__ import annotations

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

FLOOR = -9999999999  # sacrebleu's my_log(0)


def scores(metric: BLEU | CHRF, rows: np.ndarray) -> np.ndarray:
    """The corpus score of each row of summed sentence statistics (rows × statistics)."""
    rows = np.asarray(rows, dtype=np.float64)
    if isinstance(metric, BLEU) and _plain_bleu(metric):
        return bleu(rows, metric.max_ngram_order)
    if isinstance(metric, CHRF) and not metric.eps_smoothing:
        return chrf(rows, metric.order, metric.beta)
    return np.array([metric._compute_score_from_stats(row).score for row in rows])


def _plain_bleu(metric: BLEU) -> bool:
    return metric.smooth_method == "exp" and not metric.effective_order


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(x == 0.0, FLOOR, np.log(np.where(x == 0.0, 1.0, x)))


def bleu(rows: np.ndarray, order: int = 4) -> np.ndarray:
    """BLEU with sacrebleu's ``exp`` smoothing: [sys_len, ref_len, correct_1..n, total_1..n]."""
    sys_len, ref_len = rows[:, 0], rows[:, 1]
    correct, total = rows[:, 2 : 2 + order], rows[:, 2 + order : 2 + 2 * order]
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(
            sys_len < ref_len,
            np.where(sys_len > 0, np.exp(1 - ref_len / np.where(sys_len > 0, sys_len, 1)), 0.0),
            1.0,
        )
    k = len(rows)
    precisions = np.zeros((k, order))
    smooth = np.ones(k)
    alive = np.ones(k, dtype=bool)  # sacrebleu stops at the first order with no n-grams
    for n in range(order):
        alive &= total[:, n] != 0
        zero = alive & (correct[:, n] == 0)
        smooth = np.where(zero, smooth * 2, smooth)
        safe = np.where(total[:, n] == 0, 1.0, total[:, n])
        p = np.where(zero, 100.0 / (smooth * safe), 100.0 * correct[:, n] / safe)
        precisions[:, n] = np.where(alive, p, 0.0)
    logs = _log(precisions)
    summed = logs[:, 0]
    for n in range(1, order):  # left to right, as Python's sum()
        summed = summed + logs[:, n]
    score = bp * np.exp(summed / order)
    return np.where(correct.any(axis=1), score, 0.0)


def chrf(rows: np.ndarray, order: int = 6, beta: float = 2.0) -> np.ndarray:
    """chrF without eps smoothing: [hyp, ref, match] for each character (then word) order."""
    eps = 1e-16
    factor = beta**2
    k = len(rows)
    avg_prec, avg_rec, effective = np.zeros(k), np.zeros(k), np.zeros(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(order):
            n_hyp, n_ref, n_match = rows[:, 3 * i], rows[:, 3 * i + 1], rows[:, 3 * i + 2]
            prec = np.where(n_hyp > 0, n_match / np.where(n_hyp > 0, n_hyp, 1), eps)
            rec = np.where(n_ref > 0, n_match / np.where(n_ref > 0, n_ref, 1), eps)
            both = (n_hyp > 0) & (n_ref > 0)
            avg_prec = np.where(both, avg_prec + prec, avg_prec)
            avg_rec = np.where(both, avg_rec + rec, avg_rec)
            effective = effective + both
        safe = np.where(effective == 0, 1, effective)
        avg_prec = np.where(effective == 0, 0.0, avg_prec / safe)
        avg_rec = np.where(effective == 0, 0.0, avg_rec / safe)
        total = avg_prec + avg_rec
        score = (1 + factor) * avg_prec * avg_rec
        score = score / np.where(total != 0, factor * avg_prec + avg_rec, 1.0)
    return np.where(total != 0, 100 * score, 0.0)
