"""Sentencepiece tokenizers: trained by the runtime when none is given, stored in the run.

Ids are fixed: pad 0, bos 1, eos 2, unk 3. A joint vocabulary is one model
(``tokenizer/joint.model``); separate vocabularies are ``tokenizer/src.model`` and
``tokenizer/tgt.model``. Checkpoints also carry the models' bytes, so a checkpoint file
alone is enough to translate.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm
import torch
from torch import Tensor

from adl.runtime.config import DataConfig
from adl.runtime.data.corpus import TextPairs
from adl.runtime.errors import DataError

PAD, BOS, EOS, UNK = 0, 1, 2, 3
WORD_START = "\u2581"  # sentencepiece's word-start marker '▁'


def _load(data: bytes, name: str) -> spm.SentencePieceProcessor:
    try:
        sp = spm.SentencePieceProcessor(model_proto=data)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError for bad protos
        raise DataError(f"{name}: not a sentencepiece model ({exc})") from None
    ids = (sp.pad_id(), sp.bos_id(), sp.eos_id(), sp.unk_id())
    if ids != (PAD, BOS, EOS, UNK):
        raise DataError(
            f"{name}: its ids are pad={ids[0]}, bos={ids[1]}, eos={ids[2]}, "
            f"unk={ids[3]}; the runtime needs pad=0, bos=1, eos=2, unk=3 "
            "(train it with --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3)"
        )
    return sp


@dataclass
class Tokenizers:
    """The source and target sentencepiece models (the same one for a joint vocabulary)."""

    src_model: bytes
    tgt_model: bytes
    joint: bool

    def __post_init__(self) -> None:
        self.src = _load(self.src_model, "source tokenizer")
        self.tgt = self.src if self.joint else _load(self.tgt_model, "target tokenizer")
        self.word_start = self._word_starts(self.src)

    @property
    def src_vocab(self) -> int:
        return self.src.get_piece_size()

    @property
    def tgt_vocab(self) -> int:
        return self.tgt.get_piece_size()

    def encode_src(self, lines: Sequence[str]) -> list[list[int]]:
        return self.src.encode(list(lines))

    def encode_tgt(self, lines: Sequence[str]) -> list[list[int]]:
        return self.tgt.encode(list(lines))

    def decode_tgt(self, ids: Sequence[Sequence[int]]) -> list[str]:
        return [self.tgt.decode(list(x)) for x in ids]

    @staticmethod
    def _word_starts(sp: spm.SentencePieceProcessor) -> Tensor:
        """(V,) bool: the piece begins a word (it starts with '▁'; eos is a word of its own)."""
        starts = torch.tensor(
            [sp.id_to_piece(i).startswith(WORD_START) for i in range(sp.get_piece_size())]
        )
        starts[EOS] = True
        return starts

    def word_ids(self, src: Tensor) -> Tensor:
        """(B, S) index from 0 of the word each source token belongs to; padding gets 0."""
        starts = self.word_start.to(src.device)[src].long()  # (B, S)
        words = (starts.cumsum(1) - 1).clamp_min(0)
        return words.masked_fill(src.eq(PAD), 0)

    # --- storage -----------------------------------------------------------------------
    def files(self) -> dict[str, bytes]:
        if self.joint:
            return {"joint.model": self.src_model}
        return {"src.model": self.src_model, "tgt.model": self.tgt_model}

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in self.files().items():
            tmp = directory / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, directory / name)

    @classmethod
    def load(cls, directory: Path) -> Tokenizers:
        joint = directory / "joint.model"
        if joint.is_file():
            data = joint.read_bytes()
            return cls(data, data, True)
        src, tgt = directory / "src.model", directory / "tgt.model"
        if not (src.is_file() and tgt.is_file()):
            raise DataError(f"{directory}: no tokenizer (joint.model, or src.model and tgt.model)")
        return cls(src.read_bytes(), tgt.read_bytes(), False)

    def to_state(self) -> dict:
        """What a checkpoint stores (tensors and plain data only)."""
        as_tensor = lambda b: torch.frombuffer(bytearray(b), dtype=torch.uint8)
        state = {"joint": self.joint, "src": as_tensor(self.src_model)}
        if not self.joint:
            state["tgt"] = as_tensor(self.tgt_model)
        return state

    @classmethod
    def from_state(cls, state: dict) -> Tokenizers:
        src = bytes(state["src"].numpy().tobytes())
        tgt = src if state["joint"] else bytes(state["tgt"].numpy().tobytes())
        return cls(src, tgt, bool(state["joint"]))


def sentencepiece_options(cfg: DataConfig) -> dict:
    """The sentencepiece training options a configuration sets (the model depends on them;
    the number of threads aside)."""
    options = dict(
        vocab_size=cfg.vocab_size,
        model_type=cfg.spm_type,
        character_coverage=cfg.character_coverage,
        pad_id=PAD,
        bos_id=BOS,
        eos_id=EOS,
        unk_id=UNK,
        hard_vocab_limit=False,  # small data may not support vocab_size pieces
    )
    if cfg.spm_sentences:
        options.update(input_sentence_size=cfg.spm_sentences, shuffle_input_sentence=True)
    return options


def train_sentencepiece(
    sentences: Sequence[Sequence[str]], cfg: DataConfig, threads: int = 0, what: str = "data"
) -> bytes:
    """Train one sentencepiece model on lists of sentences (read by :mod:`runtime.corpus`:
    sentencepiece never reads a file itself); returns the model's bytes. The model depends
    only on the sentences, the settings and the number of threads."""
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=(line for lines in sentences for line in lines),
            model_writer=model,
            minloglevel=2,
            num_threads=threads or os.cpu_count() or 1,
            **sentencepiece_options(cfg),
        )
    except (RuntimeError, OSError) as exc:
        raise DataError(f"sentencepiece could not train on {what}: {exc}") from None
    return model.getvalue()


def write_vocab(model: bytes, path: Path) -> None:
    """The pieces and their scores, one a line (``piece<TAB>score``, as spm_train writes)."""
    sp = spm.SentencePieceProcessor(model_proto=model)
    lines = (f"{sp.id_to_piece(i)}\t{sp.get_score(i):g}\n" for i in range(sp.get_piece_size()))
    path.write_text("".join(lines), encoding="utf-8")


def make_tokenizers(
    cfg: DataConfig, directory: Path, text: TextPairs | None = None, cache=None
) -> Tokenizers:
    """Tokenizers from data.spm_* models (copied into the run), else trained on the training
    data ``text`` (read from the configuration's files when not given); saved in
    ``directory``. ``cache`` (a :class:`~runtime.tokencache.TokenCache`) keeps trained
    models by a hash of their sentences and settings."""
    read = _read_model
    if cfg.spm_model:
        tok = Tokenizers(read(cfg.spm_model), read(cfg.spm_model), True)
    elif cfg.spm_src or cfg.spm_tgt:
        if not (cfg.spm_src and cfg.spm_tgt):
            raise DataError("give both data.spm_src and data.spm_tgt (or one data.spm_model)")
        tok = Tokenizers(read(cfg.spm_src), read(cfg.spm_tgt), False)
    else:
        if text is None:
            from adl.runtime.data.corpus import read_split

            text = read_split(cfg, "train")
            if text is None:
                raise DataError("no training data to train sentencepiece on")

        def train(sides: list[list[str]]) -> bytes:
            key = sentencepiece_options(cfg)
            make = lambda: train_sentencepiece(sides, cfg, what=text.name)
            return make() if cache is None else cache.sentencepiece(sides, key, make)

        directory.mkdir(parents=True, exist_ok=True)
        if cfg.joint_vocab:
            data = train([text.src, text.tgt])
            tok = Tokenizers(data, data, True)
            write_vocab(data, directory / "joint.vocab")  # human-readable piece lists
        else:
            tok = Tokenizers(train([text.src]), train([text.tgt]), False)
            write_vocab(tok.src_model, directory / "src.vocab")
            write_vocab(tok.tgt_model, directory / "tgt.vocab")
    tok.save(directory)
    return tok


def _read_model(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the sentencepiece model: {exc.strerror}") from None
