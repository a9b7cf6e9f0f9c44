"""The token cache: tokenized sentence pairs and trained sentencepiece models, kept by a
hash of their content, so that a second run over the same corpus starts in seconds.

An entry's name is the SHA-256 of everything its content depends on:

- tokens (``tokens-KEY.pt``): the sentence pairs as read (so the files' content, their
  format and the JSONL field names) and the bytes of the tokenizer models;
- sentencepiece models (``spm-KEY.model``): the training sentences and the sentencepiece
  settings (``data.vocab_size``, ``data.spm_type``, ...).

A changed file, field, setting or tokenizer gives another name: a stale entry is never
read. Entries hold every non-empty pair, before the length filters, so one entry serves
any ``data.max_len``. They are written atomically (a temporary file, then a rename), so
runs may share a cache; an entry that does not load (a damaged file) is rebuilt, and a
cache that cannot be written is skipped with a warning. The default directory is
``.adl-cache`` beside the run directory (``data.cache_dir`` moves it, ``data.cache=false``
turns it off).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path

import sentencepiece as spm
import torch

from adl.runtime.data.corpus import TextPairs
from adl.runtime.data.parallel import TokenArray

FORMAT = 1  # bump when what an entry holds, or how text is read, changes
DEFAULT_NAME = ".adl-cache"


def _hash_lines(h, lines: Sequence[str], chunk: int = 100_000) -> None:
    """Add ``lines`` to a hash unambiguously (their count, each one's length, the bytes)."""
    h.update(len(lines).to_bytes(8, "little"))
    for start in range(0, len(lines), chunk):
        encoded = [line.encode("utf-8") for line in lines[start : start + chunk]]
        h.update(array("q", map(len, encoded)).tobytes())
        h.update(b"".join(encoded))


class TokenCache:
    """A directory of cached tokens and sentencepiece models. ``hits`` and ``misses`` count
    lookups by kind (``tokens``, ``sentencepiece``)."""

    def __init__(self, directory: str | Path, warn: Callable[[str], None] | None = None):
        self.directory = Path(directory)
        self.warn = warn or (lambda message: None)
        self.hits = {"tokens": 0, "sentencepiece": 0}
        self.misses = {"tokens": 0, "sentencepiece": 0}
        self._writable = True

    # --- keys -------------------------------------------------------------------------------
    @staticmethod
    def tokens_key(pairs: TextPairs, tokenizers) -> str:
        h = hashlib.sha256(f"adl-tokens-{FORMAT}\n".encode())
        h.update(b"joint" if tokenizers.joint else b"separate")
        for model in (tokenizers.src_model, tokenizers.tgt_model):
            h.update(hashlib.sha256(model).digest())
        _hash_lines(h, pairs.src)
        _hash_lines(h, pairs.tgt)
        return h.hexdigest()

    @staticmethod
    def sentencepiece_key(sentences: Sequence[Sequence[str]], options: dict) -> str:
        h = hashlib.sha256(f"adl-spm-{FORMAT}\n{spm.__version__}\n".encode())
        h.update(repr(sorted(options.items())).encode())
        for lines in sentences:
            _hash_lines(h, lines)
        return h.hexdigest()

    # --- entries ----------------------------------------------------------------------------
    def tokens(
        self, pairs: TextPairs, tokenizers, make: Callable[[], tuple[TokenArray, TokenArray]]
    ) -> tuple[TokenArray, TokenArray]:
        """The token ids of ``pairs`` (source, target): from the cache, or ``make()`` and
        stored."""
        key = self.tokens_key(pairs, tokenizers)
        path = self.directory / f"tokens-{key}.pt"
        found = self._load_tokens(path, key, len(pairs.src))
        if found is not None:
            self.hits["tokens"] += 1
            return found
        self.misses["tokens"] += 1
        src, tgt = make()
        entry = {
            "format": FORMAT,
            "key": key,
            "src_flat": src.flat,
            "src_offsets": src.offsets,
            "tgt_flat": tgt.flat,
            "tgt_offsets": tgt.offsets,
        }
        self._write(path, lambda f: torch.save(entry, f))
        return src, tgt

    def _load_tokens(self, path: Path, key: str, n: int) -> tuple[TokenArray, TokenArray] | None:
        if not path.is_file():
            return None
        try:
            entry = torch.load(path, map_location="cpu", weights_only=True)
            arrays = []
            for side in ("src", "tgt"):
                flat, offsets = entry[f"{side}_flat"], entry[f"{side}_offsets"]
                ok = (
                    flat.dtype == torch.int32
                    and offsets.dtype == torch.int64
                    and len(offsets) == n + 1
                    and int(offsets[0]) == 0
                    and int(offsets[-1]) == len(flat)
                    and bool((offsets[1:] >= offsets[:-1]).all())
                )
                if not ok:
                    raise ValueError("inconsistent arrays")
                arrays.append(TokenArray(flat, offsets))
            if entry["format"] != FORMAT or entry["key"] != key:
                raise ValueError("another entry")
        except Exception as exc:  # a damaged or foreign file: rebuilt, never trusted
            self.warn(f"token cache: {path} does not load ({exc}); tokenizing again")
            return None
        return arrays[0], arrays[1]

    def sentencepiece(
        self, sentences: Sequence[Sequence[str]], options: dict, make: Callable[[], bytes]
    ) -> bytes:
        """A sentencepiece model trained on ``sentences`` with ``options``: from the cache,
        or ``make()`` and stored."""
        path = self.directory / f"spm-{self.sentencepiece_key(sentences, options)}.model"
        if path.is_file():
            try:
                data = path.read_bytes()
                spm.SentencePieceProcessor(model_proto=data)
                self.hits["sentencepiece"] += 1
                return data
            except Exception as exc:
                self.warn(f"token cache: {path} does not load ({exc}); training again")
        self.misses["sentencepiece"] += 1
        data = make()
        self._write(path, lambda f: f.write(data))
        return data

    def _write(self, path: Path, write: Callable) -> None:
        if not self._writable:
            return
        tmp = path.with_name(f".tmp-{os.getpid()}-{uuid.uuid4().hex}{path.suffix}")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(tmp, "xb") as f:  # the user's umask, as any file the run writes
                write(f)
            os.replace(tmp, path)
        except (OSError, RuntimeError) as exc:  # torch.save reports a full disk so
            self._writable = False
            self.warn(
                f"token cache: cannot write in {self.directory} "
                f"({getattr(exc, 'strerror', None) or exc}); "
                "going on without it (set data.cache_dir, or data.cache=false)"
            )
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
