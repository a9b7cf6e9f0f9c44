"""The notes under a benchmark's tables: what was run, on what, by which rules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import tune
from .base import Data
from .recipe import Recipe
from .stats import VERDICT

if TYPE_CHECKING:
    from .bench import Options


def describe(r: Recipe, chosen: dict, o: Options, data: Data, sig: dict) -> list[str]:
    c = data.counts
    source, target = data.positions(r)
    tuned = "; ".join(f"{n}: {tune.cell_name(s)}" for n, s in chosen.items()) or "none"
    notes = [
        f"corpus {o.corpus}: {c['train']:,} training pairs ({c['dropped']:,} dropped by the "
        f"length filter, max_len {r.max_len}: {c['dropped_tokens_percent']:g} % of the target "
        f"tokens), {c['valid']:,} validation ({c['sample']:,} in the sample every "
        f"checkpoint is scored on), {c['test']:,} test; one {r.vocab:,}-piece sentencepiece "
        "model for all",
        f"recipe of ADL's preset {r.preset}: d_model {r.d_model}, {r.layers}+{r.layers} "
        f"blocks, FFN {r.ffn}, {r.heads} heads, dropout {r.dropout:g}, batches of "
        f"{r.max_tokens:,} tokens, Adam {r.betas}, peak learning rate {r.lr:g} after "
        f"{r.warmup} warm-up updates then inverse square root, label smoothing "
        f"{r.label_smoothing:g}, clipping {r.clip_norm:g}, a checkpoint every {r.valid_every} "
        f"updates; recipe search's settings per system: {tuned}",
        f"the tested model of every run: its best checkpoint by validation {r.best_metric}, or "
        f"the average of its last 2 to {r.average_last} checkpoints when that scores higher "
        "('avg A–B' under tested); every system validates only its loss on its clock, and "
        "its checkpoints are translated and scored after the clock (not counted)",
        f"translations of at most {r.len_a:g} x source + {r.len_b} pieces; no input is cut "
        f"(the peers' models take {source} source and {target} target positions); every "
        "beam with its toolkit's default length penalty (score / length for all three)",
        f"{o.minutes:g} minutes of training each from its first update, {o.threads} thread(s) "
        f"per process, {o.slots} processes at once on {o.device}; systems of one round ran at "
        "the same time; the same max_tokens for all, each system's real target tokens per "
        "update in the summary (batches are not equalised: fairseq pads its target side, "
        "Sockeye counts real target words)",
        f"BLEU {sig['bleu']}; chrF {sig['chrf']}; {VERDICT}",
    ]
    if o.own:
        notes.append(
            "each peer's own practice beside the common rule, compared with the same ADL runs: "
            "Sockeye's sockeye-average of its 4 checkpoints of lowest validation perplexity, "
            "fairseq's average of its last 5 checkpoints and its checkpoint_best.pt (lowest "
            "validation loss)"
        )
    if o.protocol:
        p = o.protocol
        notes.append(
            f"protocol {p['file']} (sha256 {p['sha256']}), stage {p['stage']}; every test-set "
            f"scoring is a line of {Path(str(o.ledger)).name if o.ledger else 'no ledger'}"
        )
    return notes
