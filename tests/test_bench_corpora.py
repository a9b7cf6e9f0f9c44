"""bench/corpora.py without the network: the gettext corpus read from a Debian package built
here (an ar archive holding a data.tar with a compiled .mo catalog), and the splits."""

import io
import struct
import sys
import tarfile

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import corpora  # noqa: E402


def mo_file(messages: dict[str | tuple[str, str], str | list[str]]) -> bytes:
    """A little-endian GNU .mo catalog (gettext's file format), plural entries as msgid\\0plural."""
    entries = []
    for key, value in messages.items():
        k = "\0".join(key) if isinstance(key, tuple) else key
        v = "\0".join(value) if isinstance(value, list) else value
        entries.append((k.encode(), v.encode()))
    entries.sort()
    n = len(entries)
    keys_at, values_at = 28, 28 + 8 * n
    data_at = values_at + 8 * n
    table_k, table_v, blob = [], [], b""
    for k, _ in entries:
        table_k.append((len(k), data_at + len(blob)))
        blob += k + b"\0"
    for _, v in entries:
        table_v.append((len(v), data_at + len(blob)))
        blob += v + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, n, keys_at, values_at, 0, 0)
    tables = b"".join(struct.pack("<2I", *e) for e in table_k + table_v)
    return head + tables + blob


def deb_file(files: dict[str, bytes]) -> bytes:
    """A .deb (ar: debian-binary, control.tar.gz, data.tar.xz) holding ``files``."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    out = b"!<arch>\n"
    for name, content in (
        ("debian-binary", b"2.0\n"),
        ("control.tar.gz", b"x"),  # odd length: the member is padded to an even offset
        ("data.tar.xz", data.getvalue()),
    ):
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(content):<10}`\n".encode()
        out += content + (b"\n" if len(content) % 2 else b"")
    return out


def test_gettext_catalogs_become_message_pairs(tmp_path):
    fr = "./usr/share/locale/fr/LC_MESSAGES"
    first = mo_file(
        {
            "": "Content-Type: text/plain; charset=UTF-8\n",  # the header: left out
            "cannot open directory %s": "impossible d'ouvrir le répertoire %s",
            "port": "port",  # translated as itself: left out
            ("%d file", "%d files"): ["%d fichier", "%d fichiers"],  # plural: left out
            "  -a, --all\n      do not ignore": "  -a, --all\n      ne pas ignorer",
        }
    )
    second = mo_file({"cannot open directory %s": "ouverture de %s impossible"})  # recurs
    other = mo_file({"only in German": "nur auf Deutsch"})
    (tmp_path / "a.deb").write_bytes(
        deb_file({f"{fr}/a.mo": first, "./usr/share/locale/de/LC_MESSAGES/a.mo": other})
    )
    (tmp_path / "b.deb").write_bytes(deb_file({f"{fr}/b.mo": second}))
    pairs = corpora.read_gettext([tmp_path / "a.deb", tmp_path / "b.deb"])
    assert sorted((src, tgt) for _, src, tgt in pairs) == [
        ("-a, --all do not ignore", "-a, --all ne pas ignorer"),
        ("cannot open directory %s", "impossible d'ouvrir le répertoire %s"),
    ]
    assert all(group == src for group, src, _ in pairs)


def test_a_file_that_is_not_a_debian_package_is_refused(tmp_path):
    (tmp_path / "x.deb").write_bytes(b"PK\x03\x04")
    with pytest.raises(SystemExit, match="not a Debian package"):
        corpora.read_gettext([tmp_path / "x.deb"])


def test_the_gnu_corpus_is_listed_with_pinned_packages():
    corpus = corpora.CORPORA["gnu-en-fr"]
    assert corpus.registry == "debian"
    assert all("==" in p for p in corpus.packages)


def test_wesnoth_context_prefixes_are_cut_before_pairing(tmp_path):
    fr = "./usr/share/games/wesnoth/1.16/locale/fr/LC_MESSAGES"
    catalog = mo_file(
        {
            "": "Content-Type: text/plain; charset=UTF-8\n",
            "female^aged": "âgée",
            "time of day^None": "Aucun",
            "aged": "âgé",  # the same text as a cut message: kept once (the catalog's first)
            "Use ^Uf for mushrooms": "Utilisez ^Uf pour les champignons",  # not a prefix
            "I do have a suggestion.": "Moi, j'ai bien une suggestion.",
        }
    )
    (tmp_path / "w.deb").write_bytes(deb_file({f"{fr}/wesnoth-lib.mo": catalog}))
    pairs = corpora.CORPORA["wesnoth-en-fr"].read([tmp_path / "w.deb"])
    assert sorted((src, tgt) for _, src, tgt in pairs) == [
        ("I do have a suggestion.", "Moi, j'ai bien une suggestion."),
        ("None", "Aucun"),
        ("Use ^Uf for mushrooms", "Utilisez ^Uf pour les champignons"),
        ("aged", "âgé"),
    ]
    plain = corpora.read_gettext([tmp_path / "w.deb"])  # the GNU catalogs keep carets
    assert ("female^aged", "âgée") in [(src, tgt) for _, src, tgt in plain]
