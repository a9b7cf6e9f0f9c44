"""The benchmark's data: a corpus folder found, one sentencepiece model trained for every
system, the text copied and cut into pieces, the training pairs filtered once, and the
validation sample every system's checkpoints are scored on.

A corpus folder holds ``train``, ``valid`` and ``test`` files with one pair of suffixes:
``.src``/``.tgt``, or two language codes (``train.en``/``train.fr``, as ``adl data bible``
writes them; name them with ``langs`` when there are more than two).

The validation sample is the one ADL decodes at each of its validations: of the first
``valid_max`` validation pairs, those within ``max_len`` pieces, and of those the fixed
sample of ``valid_sample`` (``adl.runtime.training.validate.bleu_sample``), found here with ADL's own
reader, filter and sampler. Its source and reference text are ADL's too, so one sacrebleu
call scores every system's translations of it alike.
"""

from __future__ import annotations

from pathlib import Path

from adl.runtime.config import DataConfig
from adl.runtime.data.corpus import read_parallel
from adl.runtime.data.parallel import Limits, encode_pairs, read_lines
from adl.runtime.data.tokenizer import Tokenizers, train_sentencepiece
from adl.runtime.training.validate import bleu_sample

from .base import Data
from .recipe import Recipe

SPLITS = ("train", "valid", "test")


def find_files(corpus: Path, langs: tuple[str, str] | None = None) -> dict[str, tuple[Path, Path]]:
    """split -> (source file, target file) of a corpus folder."""
    corpus = Path(corpus)
    if langs is None:
        if all((corpus / f"{s}.src").is_file() for s in SPLITS):
            langs = ("src", "tgt")
        else:
            suffixes = sorted({p.suffix[1:] for p in corpus.glob("train.*")} - {"src", "tgt"})
            if len(suffixes) != 2:
                raise SystemExit(
                    f"{corpus}: expected train/valid/test files with the suffixes .src/.tgt "
                    f"or two language codes, found {suffixes or 'none'} (use --langs SRC TGT)"
                )
            langs = (suffixes[0], suffixes[1])
    files = {s: (corpus / f"{s}.{langs[0]}", corpus / f"{s}.{langs[1]}") for s in SPLITS}
    missing = [str(p) for pair in files.values() for p in pair if not p.is_file()]
    if missing:
        raise SystemExit(f"{corpus}: missing {', '.join(missing)}")
    return files


def keep_pair(ls: int, lt: int, max_len: int, max_ratio: float) -> bool:
    """ADL's training filter (runtime.data.encode_pairs), on piece counts."""
    if max_len and (ls > max_len or lt > max_len):
        return False
    return not (max_ratio and max(ls, lt) > max_ratio * max(min(ls, lt), 1))


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def validation_sample(raw: tuple[Path, Path], model: Path, recipe: Recipe) -> tuple[list, list]:
    """(sources, references) of the validation sample ADL decodes, in its order."""
    text = read_parallel(*raw)
    text.first(recipe.valid_max)
    joint = model.read_bytes()
    tok = Tokenizers(joint, joint, True)
    data = encode_pairs(
        text, tok.encode_src, tok.encode_tgt, limits=Limits(recipe.max_len, 0.0), keep_text=True
    )
    assert data.sources is not None and data.references is not None  # keep_text
    sample = bleu_sample(len(data), recipe.valid_sample)
    return [data.sources[i] for i in sample], [data.references[i] for i in sample]


def prepare(
    files: dict[str, tuple[Path, Path]], out: Path, recipe: Recipe, data_cfg: DataConfig
) -> Data:
    """Write ``out/raw`` (the text), ``out/spm`` (the model), ``out/pieces`` (pieces)."""
    import sentencepiece as spm

    out = Path(out)
    raw_dir, piece_dir = out / "raw", out / "pieces"
    for d in (raw_dir, piece_dir):
        d.mkdir(parents=True, exist_ok=True)
    raw: dict[str, tuple[Path, Path]] = {}
    for split, (src, tgt) in files.items():
        s, t = read_lines(src), read_lines(tgt)
        if len(s) != len(t):
            raise SystemExit(f"{src} has {len(s):,} lines but {tgt} has {len(t):,}")
        if split == "train":  # what ADL's reader keeps: both sides non-empty, stripped
            kept = [(a.strip(), b.strip()) for a, b in zip(s, t) if a.strip() and b.strip()]
            s, t = [a for a, _ in kept], [b for _, b in kept]
        if split == "valid" and recipe.valid_max:
            s, t = s[: recipe.valid_max], t[: recipe.valid_max]
        raw[split] = (raw_dir / f"{split}.src", raw_dir / f"{split}.tgt")
        for path, lines in zip(raw[split], (s, t)):
            write_lines(path, lines)

    model = out / "spm" / "joint.model"
    if not model.is_file():
        cfg = DataConfig(**{**data_cfg.__dict__, "vocab_size": recipe.vocab})
        model.parent.mkdir(parents=True, exist_ok=True)
        sides = [read_lines(p) for p in raw["train"]]  # as ADL trains it: on what it reads
        model.write_bytes(train_sentencepiece(sides, cfg, what=str(raw["train"][0].parent)))
    sp = spm.SentencePieceProcessor(model_file=str(model))
    raw["sample"] = (raw_dir / "sample.src", raw_dir / "sample.tgt")
    for path, lines in zip(raw["sample"], validation_sample(raw["valid"], model, recipe)):
        write_lines(path, lines)

    pieces: dict[str, tuple[Path, Path]] = {}
    counts: dict[str, float] = {}
    longest = longest_ref = 0
    for split in (*SPLITS, "sample"):
        s, t = (sp.encode(read_lines(path), out_type=str) for path in raw[split])
        if split == "train":
            pairs = [
                (a, b)
                for a, b in zip(s, t)
                if keep_pair(len(a), len(b), recipe.max_len, recipe.max_ratio)
            ]
            counts["dropped"] = len(s) - len(pairs)
            total = sum(len(b) + 1 for b in t)  # target tokens with eos, as trained on
            used = sum(len(b) + 1 for _, b in pairs)
            counts["dropped_tokens_percent"] = round(100 * (total - used) / max(total, 1), 1)
            s, t = [a for a, _ in pairs], [b for _, b in pairs]
        elif split != "sample":  # what the recipe cannot have trained for, what searches cut
            longest = max([longest, *(len(a) for a in s)])
            longest_ref = max([longest_ref, *(len(b) for b in t)])
            over = sum(max(len(a), len(b)) > recipe.max_len for a, b in zip(s, t))
            counts[f"{split}_over_max_len"] = over if recipe.max_len else 0
            counts[f"{split}_over_output_limit"] = sum(
                len(b) > int(recipe.len_a * len(a) + recipe.len_b) for a, b in zip(s, t)
            )
        counts[split] = len(s)
        pieces[split] = (piece_dir / f"{split}.src", piece_dir / f"{split}.tgt")
        for path, seqs in zip(pieces[split], (s, t)):
            write_lines(path, [" ".join(x) for x in seqs])
    return Data(out, model, raw, pieces, counts, longest, longest_ref)
