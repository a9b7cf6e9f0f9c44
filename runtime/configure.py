"""The configuration of a run from what a user names: model files, data, a preset, settings.

Precedence: the defaults, the stored configuration (``resume``), the preset, the files and
data given, then ``--set`` items. A resumed run keeps its model and data: giving others is
an error (the same ones again are fine, so a command re-run with ``--resume`` works).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from . import config as cfgmod
from .config import Config
from .data import files_of
from .errors import ConfigError, UserError
from .rundir import RunDir


def configure(
    files: Sequence[str] = (),
    *,
    preset: str | None = None,
    sets: Sequence[str] = (),
    train: tuple[str, str] | None = None,
    valid: tuple[str, str] | None = None,
    resume_from: str | Path | None = None,
    compile: bool = False,
    init_from: str | Path | None = None,
    new_tokenizer: bool = False,
) -> Config:
    """``train``/``valid``: (source file, target file). ``resume_from``: a run directory
    whose config.yaml is the starting point. ``init_from``: a run directory or checkpoint
    whose weights start a new run (``new_tokenizer``: not with its tokenizer)."""
    if init_from is not None and resume_from is not None:
        raise ConfigError("--init-from starts a new run: it does not go with --resume")
    stored = None
    if resume_from is not None:
        run = RunDir(Path(resume_from))
        if not run.config.is_file():
            raise UserError(f"{resume_from}: nothing to resume (no config.yaml)")
        stored = cfgmod.from_dict(cfgmod.read_yaml(run.config) or {}, str(run.config))
        _absolute_paths(stored)
    config = cfgmod.load_config(preset, base=stored.to_dict() if stored else None)
    if files:
        from .model import assign_files  # imports adl (and torch) only when needed

        for key, value in assign_files(list(files)).items():
            setattr(config.model, key, value)
    if train:
        config.data.train_src, config.data.train_tgt = train
    if valid:
        config.data.valid_src, config.data.valid_tgt = valid
    if compile:
        config.train.compile = True
    if init_from is not None:
        config.train.init_from = str(init_from)
    if new_tokenizer:
        config.train.new_tokenizer = True
    for item in sets:
        key, value = cfgmod.parse_override(item)
        cfgmod.set_value(config, key, value)
    _absolute_paths(config)  # the run resumes from any directory
    if stored is not None:
        changed = [
            f"{section}.{name}"
            for section in ("model", "data")
            for name, value in getattr(config, section).__dict__.items()
            if getattr(getattr(stored, section), name) != value
        ]
        if changed:
            raise ConfigError(
                f"{resume_from} was trained with other model or data settings "
                f"({', '.join(changed)}): a resumed run keeps its own; start a "
                "new run (another --out) to change them"
            )
    return config.validate()


PATHS = {
    "model": ("encoder", "decoder", "joint"),
    "data": ("train_src", "train_tgt", "valid_src", "valid_tgt", "spm_model", "spm_src", "spm_tgt"),
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
) -> tuple[str, str] | None:
    """(source, target) from ``PREFIX`` + ``--langs`` or from explicit files."""
    if prefix and (src or tgt):
        raise ConfigError(f"give --{what} PREFIX or --{what}-src/--{what}-tgt, not both")
    if prefix:
        if not langs:
            raise ConfigError(f"--{what} PREFIX needs --langs SRC TGT")
        return files_of(prefix, langs)
    if src or tgt:
        if not (src and tgt):
            raise ConfigError(f"give both --{what}-src and --{what}-tgt")
        return src, tgt
    return None
