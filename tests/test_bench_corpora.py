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


def test_ding_example_sentences_are_read_from_the_dictionary(tmp_path):
    lines = [
        "# Version :: devel 2023-01-30",
        "Aal {m} | Aale {pl} :: eel | eels",  # dictionary entries, not sentences
        "los sein {v} | Was ist hier los? | Es ist nichts los. :: to be going on | "
        "What's going on here? | Nothing is happening.",
        "Fuchtel {f} | Sie hat ihn unter der Fuchtel. ; Er hat sie unter der Fuchtel. :: "
        "thumb | She has him under her thumb. ; He has her under his thumb.",
        "etw. zugeben | Ich gebe etw. zu. :: to admit sth. | I admit sth.",  # notation
        "zweimal | Was ist hier los? :: twice | A sentence seen before.",  # seen: left out
        "kurz | Ja. :: short | Yes.",  # under three words
        "ungleich | Eins zwei drei. | Vier fünf sechs. :: unequal | One two three.",
    ]
    text = ("\n".join(lines) + "\n").encode()
    (tmp_path / "d.deb").write_bytes(deb_file({"./usr/share/trans/de-en": text}))
    pairs = corpora.CORPORA["ding-de-en"].read([tmp_path / "d.deb"])
    assert pairs == [
        ("los sein {v}", "Was ist hier los?", "What's going on here?"),
        ("los sein {v}", "Es ist nichts los.", "Nothing is happening."),
        ("Fuchtel {f}", "Sie hat ihn unter der Fuchtel.", "She has him under her thumb."),
        ("Fuchtel {f}", "Er hat sie unter der Fuchtel.", "He has her under his thumb."),
    ]


def test_interface_messages_lose_context_and_mnemonics():
    assert corpora.interface_text("_State/County:") == "State/County:"
    assert corpora.interface_text("E_stado/Condado:") == "Estado/Condado:"
    assert corpora.interface_text("Open &Network...") == "Open Network..."
    assert corpora.interface_text("(_L) Добавить последним") == "Добавить последним"
    assert corpora.interface_text("Add _Last") == "Add Last"
    assert corpora.interface_text("ASCII\x04VLC media player") == "VLC media player"
    # more than one marker: part of the text (identifiers, a literal ampersand pair)
    assert corpora.interface_text("worker_level and max_size") == "worker_level and max_size"
    assert corpora.interface_text("Tom & Jerry") == "Tom & Jerry"


def test_freeciv_qualifiers_are_cut_and_the_target_is_russian(tmp_path):
    messages = {
        "?unit:Warriors": "Воины",
        "Add _Last": "(_L) Добавить последним",
        "Why? Because: it is so": "Потому что так",  # a question mark inside: kept
    }
    header = {"": "Content-Type: text/plain; charset=UTF-8\n"}
    catalog = {"./usr/share/locale/ru/LC_MESSAGES/freeciv-core.mo": mo_file(header | messages)}
    (tmp_path / "f.deb").write_bytes(deb_file(catalog))
    pairs = corpora.CORPORA["freeciv-en-ru"].read([tmp_path / "f.deb"])
    assert sorted((src, tgt) for _, src, tgt in pairs) == [
        ("Add Last", "Добавить последним"),
        ("Warriors", "Воины"),
        ("Why? Because: it is so", "Потому что так"),
    ]


def test_the_fresh_corpora_are_pinned_and_their_readme_gives_each_files_sha256(tmp_path):
    import hashlib

    for name in ("ding-de-en", "desktop-en-es", "freeciv-en-ru"):
        corpus = corpora.CORPORA[name]
        assert corpus.registry == "debian" and all("==" in p for p in corpus.packages)
    corpus = corpora.CORPORA["ding-de-en"]
    pairs = [(f"g{i}", f"Satz {i} ist hier.", f"Sentence {i} is here.") for i in range(60)]
    counts = corpora.write(corpus, pairs, tmp_path)
    assert sum(counts.values()) == 60
    readme = (tmp_path / "README.md").read_text()
    digest = hashlib.sha256((tmp_path / "test.tgt").read_bytes()).hexdigest()
    assert f"`test.tgt` {digest}" in readme and corpora.sha256(tmp_path / "test.tgt") == digest
    assert "GPL-2.0-or-later" in readme
