"""The configuration of a run from what a user names: model files, data, a preset, settings.

Precedence: the defaults, the stored configuration (``resume``), the preset, the files and
data given, then ``--set`` items. A resumed run keeps its model and data: giving others is
an error (the same ones again are fine, so a command re-run with ``--resume`` works).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from adl.runtime import config as cfgmod
from adl.runtime.config import Config
from adl.runtime.data.corpus import pair_format
from adl.runtime.data.parallel import files_of
from adl.runtime.errors import ConfigError, UserError
from adl.runtime.rundir import RunDir


def configure(
    files: Sequence[str] = (),
    *,
    preset: str | None = None,
    sets: Sequence[str] = (),
    train: tuple[str, str] | str | None = None,
    valid: tuple[str, str] | str | None = None,
    resume_from: str | Path | None = None,
    compile: bool = False,
    init_from: str | Path | None = None,
    new_tokenizer: bool = False,
) -> Config:
    """``train``/``valid``: (source file, target file), or one file of pairs (``.tsv``,
    ``.jsonl``, optionally ``.gz``). ``resume_from``: a run directory whose config.yaml is
    the starting point. ``init_from``: a run directory or checkpoint whose weights start a
    new run (``new_tokenizer``: not with its tokenizer)."""
    conflict = start_conflict(resume_from is not None, init_from, new_tokenizer)
    if conflict:
        raise ConfigError(conflict)
    stored = None
    if resume_from is not None:
        run = RunDir(Path(resume_from))
        if not run.config.is_file():
            raise UserError(f"{resume_from}: nothing to resume (no config.yaml)")
        stored = cfgmod.from_dict(cfgmod.read_yaml(run.config) or {}, str(run.config))
        _absolute_paths(stored)
    config = cfgmod.load_config(preset, base=stored.to_dict() if stored else None)
    if files:
        from adl.runtime.model.build import assign_files  # imports adl (and torch) only when needed

        for key, value in assign_files(list(files)).items():
            setattr(config.model, key, value)
    for split, given in (("train", train), ("valid", valid)):
        if given:
            one, two = (given, (None, None)) if isinstance(given, (str, Path)) else (None, given)
            setattr(config.data, split, str(one) if one else None)
            setattr(config.data, f"{split}_src", two[0])
            setattr(config.data, f"{split}_tgt", two[1])
    if compile:
        config.train.compile = True
    if init_from is not None:
        config.train.init_from = str(init_from)
    if new_tokenizer:
        config.train.new_tokenizer = True
    cfgmod.apply_sets(config, sets)
    _absolute_paths(config)  # the run resumes from any directory
    if stored is not None:
        changed = [
            f"{section}.{name}"
            for section in ("model", "data")
            for name, value in getattr(config, section).__dict__.items()
            if getattr(getattr(stored, section), name) != value
            and f"{section}.{name}" not in NOT_THE_RUNS
        ]
        if changed:
            raise ConfigError(
                f"{resume_from} was trained with other model or data settings "
                f"({', '.join(changed)}): a resumed run keeps its own; start a "
                "new run (another --out) to change them"
            )
    return config.validate()


def start_conflict(resume: bool, init_from: str | Path | None, new_tokenizer: bool) -> str | None:
    """What is wrong with how a run is asked to start (None: nothing): ``--init-from`` starts
    a new run, and ``--new-tokenizer`` is a choice of ``--init-from``."""
    if resume and init_from:
        return "--init-from starts a new run: it does not go with --resume"
    if new_tokenizer and not init_from:
        return "--new-tokenizer goes with --init-from"
    return None


NOT_THE_RUNS = {"data.cache", "data.cache_dir"}  # settings a resumed run may change

PATHS = {
    "model": ("encoder", "decoder", "joint"),
    "data": (
        "train",
        "train_src",
        "train_tgt",
        "valid",
        "valid_src",
        "valid_tgt",
        "spm_model",
        "spm_src",
        "spm_tgt",
        "cache_dir",
    ),
    "train": ("init_from",),
}


def _absolute_paths(config: Config) -> None:
    for section, names in PATHS.items():
        part = getattr(config, section)
        for name in names:
            value = getattr(part, name)
            if value:
                setattr(part, name, os.path.abspath(os.path.expanduser(value)))


def data_files(
    prefix: str | None, langs: Sequence[str] | None, src: str | None, tgt: str | None, what: str
) -> tuple[str, str] | str | None:
    """(source, target) from ``PREFIX`` + ``--langs`` or from explicit files, or one file of
    pairs (``--train FILE.tsv``, ``--train FILE.jsonl.gz``)."""
    if prefix and (src or tgt):
        raise ConfigError(f"give --{what} PREFIX or --{what}-src/--{what}-tgt, not both")
    if prefix and pair_format(prefix):
        return prefix
    if prefix:
        if not langs:
            raise ConfigError(
                f"--{what} PREFIX needs --langs SRC TGT (or give one file of pairs: "
                f"--{what} FILE.tsv or FILE.jsonl)"
            )
        return files_of(prefix, langs)
    if src or tgt:
        if not (src and tgt):
            raise ConfigError(f"give both --{what}-src and --{what}-tgt")
        return src, tgt
    return None
