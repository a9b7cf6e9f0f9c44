"""``adl translate --engine ctranslate2``: a model exported by ``adl export --ctranslate2``
(:mod:`adl.runtime.model.ct2_convert` converts it) decoded by CTranslate2, behind the same
``search`` and ``translate`` as :class:`~adl.runtime.decode.translator.Translator`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adl.runtime.errors import CheckpointError
from adl.runtime.model.ct2_convert import ctranslate2_module
from adl.runtime.search_options import SearchOptions


class Ct2Translator:
    """``adl translate --engine ctranslate2``: sentencepiece in and out around
    ``ctranslate2.Translator``, with :class:`~adl.runtime.decode.translator.Translator`'s
    ``search`` and ``translate``."""

    def __init__(
        self, folder: Path, device: str = "cpu", compute_type: str = "default", threads: int = 0
    ):
        ct2 = ctranslate2_module()
        from adl.runtime.data.tokenizer import Tokenizers
        from adl.runtime.model.export import CT2_DIR

        model_dir = folder / CT2_DIR
        if not (model_dir / "model.bin").is_file():
            raise CheckpointError(
                f"{folder}: no CTranslate2 model: write one with adl export RUN --out "
                f"{folder} --ctranslate2"
            )
        self.ct2, self.model_dir = ct2, model_dir
        self.kind = str(device).split(":")[0]
        self.index = int(str(device).split(":")[1]) if ":" in str(device) else 0
        self.compute_type, self.threads = compute_type, threads
        self.engines: dict[int, Any] = {}
        self.engine = self.engine_of(1)
        self.tokenizers = Tokenizers.load(folder)
        self.origin = str(folder)

    def engine_of(self, workers: int):
        """The ``ctranslate2.Translator`` of ``workers`` (its ``inter_threads``), made on first
        use: the threads (``threads``, or CTranslate2's default where 0) shared between
        them, as ADL's own search shares torch's between its workers."""
        if workers not in self.engines:
            intra = max(1, self.threads // workers) if self.threads else 0  # 0: CT2's own
            try:
                self.engines[workers] = self.ct2.Translator(
                    str(self.model_dir),
                    device=self.kind,
                    device_index=self.index,
                    compute_type=self.compute_type,
                    inter_threads=workers,
                    intra_threads=intra,
                )
            except (ValueError, RuntimeError) as exc:
                raise CheckpointError(
                    f"{self.model_dir}: CTranslate2 cannot load it: {exc}"
                ) from None
        return self.engines[workers]

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", compute_type: str = "default"):
        from adl.runtime.model.export import is_export

        if not is_export(path):
            raise CheckpointError(
                f"{path}: not a folder of adl export; --engine ctranslate2 reads one written "
                "with adl export RUN --out DIR --ctranslate2"
            )
        return cls(Path(path), str(device), compute_type)

    def search(self, lines: Sequence[str], options: SearchOptions, warn=None, numbers=None):
        from adl.runtime.decode.hypotheses import Hypothesis

        sp_src, sp_tgt = self.tokenizers.src, self.tokenizers.tgt
        pieces = [sp_src.encode(line, out_type=str) if line.strip() else [] for line in lines]
        todo = [i for i, p in enumerate(pieces) if p]
        results = [[("", Hypothesis([], 0.0, 0.0))] for _ in lines]
        if not todo:
            return results
        # ADL limits each sentence to len_a x its length + len_b tokens; CTranslate2 takes one
        # limit per call, and one call per distinct limit would hardly batch. So one call
        # with the largest limit, then the sentences that went past their own limit again at
        # that limit. Greedy output is the same as a search at each sentence's own limit; a
        # beam's would differ only where a hypothesis cut at the limit outscored every
        # hypothesis that ended within it.
        limits = {i: max(1, int(len(pieces[i]) * options.len_a + options.len_b)) for i in todo}
        found = dict(
            zip(todo, self._batch([pieces[i] for i in todo], options, max(limits.values())))
        )
        again: dict[int, list[int]] = {}
        for i in todo:
            if any(len(tokens) > limits[i] for tokens in found[i].hypotheses):
                again.setdefault(limits[i], []).append(i)
        for limit, rows in again.items():
            found.update(zip(rows, self._batch([pieces[i] for i in rows], options, limit)))
        for i in todo:
            hyps = []
            for tokens, score in zip(found[i].hypotheses, found[i].scores):
                ids = [sp_tgt.piece_to_id(t) for t in tokens]
                hyps.append((sp_tgt.decode(ids), Hypothesis(ids, math.nan, score)))
            results[i] = hyps or results[i]
        return results

    def _batch(self, pieces: list[list[str]], options: SearchOptions, limit: int) -> list:
        """One ``translate_batch`` call. CTranslate2 counts a batch's source tokens, where
        ``max_tokens`` counts source tokens x beam (the batches ADL's own search makes): it is
        given ``max_tokens / beam``, so that both engines batch the same sentences."""
        return self.engine_of(options.workers).translate_batch(
            pieces,
            beam_size=options.beam,
            num_hypotheses=options.nbest,
            length_penalty=options.alpha if options.penalty != "none" else 0.0,
            max_decoding_length=limit,
            max_batch_size=max(1, options.max_tokens // options.beam),
            batch_type="tokens",
            return_scores=True,
            suppress_sequences=[["<pad>"], ["<s>"]],
        )

    def translate(self, lines, options: SearchOptions | None = None, **settings: Any):
        """As :meth:`Translator.translate <adl.runtime.decode.translator.Translator.translate>`:
        the same search options by the same names."""
        from adl.runtime.decode.translator import translations

        return translations(self, lines, SearchOptions.of(options, **settings))
