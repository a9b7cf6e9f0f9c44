"""``adl search confirm``: the top programs of a search retrained with seeds through ``adl
sweep``, so that a winner is a confirmed result, not the luck of one run.

It writes a sweep spec (``SEARCH/confirm/spec.yaml``) whose systems are the top programs
(their ADL text in ``SEARCH/confirm/``), each against a baseline (the space's first program,
or the files given), with the search's preset, settings, training budget and data (a test set
added), and runs it with the sweep's API: its table has the test BLEU over seeds and the
seed-aware significance test of ``adl.runtime.sweep.significance``, each program against the
baseline (docs/experiments.md, "The significance test").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from adl.runtime.search.report import report
from adl.runtime.search.spec import SearchError, Spec, load

BUDGET_KEYS = ("train.max_steps", "max_steps")  # the sweep's budget says them


def write_spec(
    folder: Path,
    spec: Spec,
    programs: list[tuple[str, str, str]],
    baseline: tuple[str, str],
    test: str,
    seeds: int,
    steps: int,
) -> Path:
    """The sweep spec of a confirmation: ``programs`` are (name, encoder text, decoder
    text); ``baseline`` the baseline's two texts; ``test`` a test prefix in the search's
    languages."""
    out = folder / "confirm"
    out.mkdir(parents=True, exist_ok=True)
    systems = []
    for name, enc, dec in [("BASELINE", *baseline), *programs]:
        files = []
        for side, text in (("enc", enc), ("dec", dec)):
            path = out / f"{name}.{side}.adl"
            path.write_text(text, encoding="utf-8")
            files.append(path.name)
        systems.append({"name": name, "files": files})
    train, langs = _prefix(spec.train)
    valid, valid_langs = _prefix(spec.valid)
    if valid_langs != langs:
        raise SearchError("the search's training and validation data have other languages")
    settings: dict[str, Any] = {}
    for item in spec.sets:
        key, _, value = item.partition("=")
        if key.strip() not in BUDGET_KEYS:
            settings[key.strip()] = _value(value)
    if spec.valid_every:
        settings["train.valid_every"] = spec.valid_every
    document = {
        "name": f"{spec.study}-confirm",
        "description": f"the top {len(programs)} programs of search {folder.name}, "
        f"{seeds} seeds each, against the baseline",
        "preset": spec.preset,
        "budget": {"steps": steps},
        "settings": settings,
        "seeds": seeds,
        "baseline": "BASELINE",
        "data": {"train": train, "valid": valid, "test": test, "langs": langs},
        "systems": systems,
    }
    path = out / "spec.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def _value(text: str) -> Any:
    """A --set value as the sweep spec's YAML wants it (YAML reads 1e-3 as a string)."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def _prefix(files: list[str]) -> tuple[str, list[str]]:
    """(PREFIX, [SRC, TGT]) of two files PREFIX.SRC and PREFIX.TGT."""
    if len(files) == 2:
        a, b = (os.path.basename(f) for f in files)
        stem_a, _, src = a.rpartition(".")
        stem_b, _, tgt = b.rpartition(".")
        if stem_a and stem_a == stem_b and os.path.dirname(files[0]) == os.path.dirname(files[1]):
            return os.path.join(os.path.dirname(files[0]), stem_a), [src, tgt]
    raise SearchError(
        "adl search confirm needs the search's data as PREFIX.SRC and PREFIX.TGT files "
        "(the sweep reads prefixes)"
    )


def confirm(
    folder: str | Path,
    *,
    test: str,
    top: int = 3,
    seeds: int = 3,
    baseline: tuple[str, str] | None = None,
    jobs: int = 1,
    executor: str = "local",
    storage: str | None = None,
    check: bool = False,
) -> Any:
    """Retrain the top ``top`` programs (the front, for two objectives) with ``seeds``
    seeds through the sweep; returns its :class:`~adl.runtime.sweep.SweepResult`.
    ``test``: the test data's prefix (PREFIX.SRC, PREFIX.TGT). ``check``: write the spec
    and check it, training nothing."""
    from adl.runtime import sweep

    folder = Path(folder)
    spec = load(folder)
    found = report(folder, storage=storage, top=top)
    if not found.best:
        raise SearchError(f"{folder}: no trial has finished yet: nothing to confirm")
    programs = [(f"T{r.trial}", r.encoder, r.decoder) for r in found.best[:top]]
    if baseline is None:
        base = folder / "baseline"
        texts = tuple(
            (base / f"first.{side}.adl").read_text(encoding="utf-8") for side in ("enc", "dec")
        )
    else:
        texts = tuple(Path(p).read_text(encoding="utf-8") for p in baseline)
    from adl.runtime.search.trial import first_files, trial_config

    steps = spec.steps or trial_config(spec, folder, first_files(folder), 1).train.max_steps
    path = write_spec(
        folder, spec, programs, (texts[0], texts[1]), os.path.abspath(test), seeds, steps
    )
    return sweep.sweep(
        path, folder / "confirm" / "sweep", jobs=jobs, executor=executor, check=check
    )
