"""A corpus a researcher already has, as ADL reads it: a folder of ``train``, ``valid`` and
``test`` files in two languages, such as fairseq's ``prepare-iwslt14.sh`` writes
(``train.de``/``train.en``, ``valid.*``, ``test.*``: tokenized, lowercased, BPE'd with ``@@``
continuation markers), or any ``SPLIT.SRC``/``SPLIT.TGT``.

:func:`prepare_files` checks the six files (present, non-empty, as many lines on each side),
undoes a subword segmentation when it finds one (ADL trains its own sentencepiece model on
the text, and scores detokenised output), and writes the corpus where ADL reads it, with a
``corpus.json`` that records where it came from, the counts and each file's sha256.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from adl.runtime.errors import DataError

SPLITS = ("train", "valid", "test")
BPE = re.compile(r"@@( |$)")  # subword-nmt's continuation marker (fairseq's --remove-bpe)


@dataclass
class FilesInfo:
    source: str  # the folder read
    langs: tuple[str, str]
    counts: dict[str, int]
    bpe_removed: bool
    sha256: dict[str, str] = field(default_factory=dict)  # each input file's


def find_langs(folder: Path) -> tuple[str, str]:
    """The two language suffixes of ``train.*`` in ``folder`` (an error unless exactly two)."""
    suffixes = sorted({p.suffix[1:] for p in folder.glob("train.*") if p.suffix[1:]})
    if len(suffixes) != 2:
        found = ", ".join(suffixes) or "none"
        raise DataError(
            f"{folder}: expected train.SRC and train.TGT (two languages), found {found}: "
            "name them with --langs SRC TGT"
        )
    return suffixes[0], suffixes[1]


def has_bpe(lines: list[str]) -> bool:
    """Whether a side looks segmented by subword-nmt: its continuation marker in at least
    1 % of the lines."""
    marked = sum(1 for line in lines[:20000] if BPE.search(line))
    return marked >= max(1, len(lines[:20000]) // 100)


def prepare_files(
    folder: str | Path,
    out: str | Path,
    langs: tuple[str, str] | None = None,
    remove_bpe: bool | None = None,
) -> FilesInfo:
    """Read ``folder``'s six files and write them to ``out`` (``remove_bpe``: undo ``@@``
    segmentation; None: where it is found)."""
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder")
    langs = langs or find_langs(folder)
    paths = {(s, lang): folder / f"{s}.{lang}" for s in SPLITS for lang in langs}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise DataError(f"{folder}: missing {', '.join(missing)}")
    texts = {key: p.read_text(encoding="utf-8").splitlines() for key, p in paths.items()}
    counts = {}
    for split in SPLITS:
        a, b = (len(texts[split, lang]) for lang in langs)
        if a != b:
            raise DataError(
                f"{folder}: {split}.{langs[0]} has {a:,} lines, {split}.{langs[1]} {b:,}"
            )
        if a == 0:
            raise DataError(f"{folder}: {split}.{langs[0]} is empty")
        counts[split] = a
    if remove_bpe is None:
        remove_bpe = any(has_bpe(texts["train", lang]) for lang in langs)
    out.mkdir(parents=True, exist_ok=True)
    for (split, lang), lines in texts.items():
        if remove_bpe:
            lines = [BPE.sub("", line) for line in lines]
        (out / f"{split}.{lang}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    info = FilesInfo(
        str(folder.resolve()),
        (langs[0], langs[1]),
        counts,
        remove_bpe,
        {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths.values()},
    )
    (out / "corpus.json").write_text(json.dumps(asdict(info), indent=1) + "\n", encoding="utf-8")
    return info
