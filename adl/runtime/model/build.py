"""The model of a run, built from its .adl files through ``adl.models.build`` (the public API)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import adl.analysis.variables
import adl.api
import adl.errors
import adl.models
from adl.registry import JOINT
from adl.roles import roles_in
from adl.runtime.config import ModelConfig
from adl.runtime.errors import ConfigError


def is_joint(path: str | Path) -> bool:
    """A joint (decoder-only) description: ``*.joint.adl``, or a file defining ``joint =``."""
    return JOINT in roles_in(Path(path))


def assign_files(files: list[str]) -> dict[str, str | None]:
    """``[enc, dec]``, ``[model]`` (defines encoder and decoder) or ``[joint]`` ->
    model.encoder / model.decoder / model.joint."""
    if len(files) == 2:
        return {"encoder": files[0], "decoder": files[1], "joint": None}
    if len(files) == 1:
        if is_joint(files[0]):
            return {"encoder": None, "decoder": None, "joint": files[0]}
        return {"encoder": files[0], "decoder": None, "joint": None}
    raise ConfigError(
        "give the model as ENC.adl DEC.adl, one MODEL.adl defining encoder = "
        "and decoder =, or one JOINT.adl"
    )


def check_model_files(cfg: ModelConfig) -> None:
    """Check a run's .adl files with its model settings (cheap: nothing is built); raises :class:`adl.errors.ADLError`, or
    :class:`ConfigError` for a variable of ``model.vars`` that no file reads (a misspelt or
    stale name would silently train the files' defaults)."""
    options: dict[str, Any] = dict(
        d_model=cfg.d_model, heads=cfg.heads, dropout=cfg.dropout, vars=dict(cfg.vars)
    )
    if cfg.joint:
        programs = [adl.api.check(cfg.joint, **options)]
    elif cfg.encoder:
        programs = list(adl.models.check_model(cfg.encoder, cfg.decoder, **options))
    else:
        raise ConfigError("no model: give .adl files (model.encoder / model.joint)")
    unused = adl.analysis.variables.unused_variables(cfg.vars, programs, "model.vars")
    if unused:
        raise ConfigError(
            "; ".join(f"{w.message} ({w.hint})" for w in unused)
            + ": remove it or correct its name (--set model.vars.NAME=VALUE sets one)"
        )


def check_model(cfg: ModelConfig) -> None:
    """The previous release's name of :func:`check_model_files` (``adl.check_model`` is
    another function: it checks ADL texts and returns their programs); kept one release."""
    warnings.warn(
        "adl.runtime.model.build.check_model is renamed check_model_files; the old name goes "
        "in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    check_model_files(cfg)


def build_options(
    cfg: ModelConfig, src_vocab: int, tgt_vocab: int, length_ratio: float, **more: Any
) -> dict[str, Any]:
    """The keyword arguments of ``adl.models.build`` for a run's model settings."""
    return dict(
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        d_model=cfg.d_model,
        heads=cfg.heads,
        dropout=cfg.dropout,
        vars=dict(cfg.vars),
        tie_embeddings=cfg.tie_embeddings,
        share_embeddings=cfg.share_embeddings,
        length_ratio=length_ratio,
        **more,
    )


def build_model(cfg: ModelConfig, src_vocab: int, tgt_vocab: int, length_ratio: float):
    """``adl.models.build`` with the run's settings; raises :class:`adl.errors.ADLError` for a bad file."""
    options = build_options(cfg, src_vocab, tgt_vocab, length_ratio)
    if cfg.joint:
        return adl.models.build(joint=cfg.joint, **options)
    if not cfg.encoder:
        raise ConfigError("no model: give .adl files (model.encoder / model.joint)")
    return adl.models.build(cfg.encoder, cfg.decoder, **options)


def position_limits(
    cfg: ModelConfig | None = None, spec: Mapping[str, Any] | None = None
) -> tuple[int, int]:
    """The longest source and target, in tokens without eos and bos, that the model's learned
    positions embed (``learn_pos(max_len=N)``: N - 1); 0 where nothing limits a side. From
    the run's .adl files (``cfg``) or a checkpoint's model description (``spec``); raises
    :class:`adl.errors.ADLError` for a description that does not check."""
    texts: dict[str, Any]
    names: dict[str, Any]
    if spec is not None:
        s = adl.models.ModelSpec.from_dict(spec)
        options, texts = s.hyper(), {"encoder": s.encoder, "decoder": s.decoder, "joint": s.joint}
        names = dict(s.names)
    else:
        assert cfg is not None, "position_limits needs a model configuration or a spec"
        options = dict(d_model=cfg.d_model, heads=cfg.heads, dropout=cfg.dropout, vars=cfg.vars)
        files = {"encoder": cfg.encoder, "decoder": cfg.decoder, "joint": cfg.joint}
        texts = {k: Path(v) if v else None for k, v in files.items()}
        names = {}
    if texts["joint"] is not None:
        joint = adl.api.check(texts["joint"], role="joint", name=names.get("joint"), **options)
        sides = (joint.network.max_length, joint.network.max_length)
    else:
        enc, dec = adl.models.check_model(texts["encoder"], texts["decoder"], **options)
        sides = (enc.network.max_length, dec.network.max_length)
    src, tgt = (max(n - 1, 1) if n else 0 for n in sides)
    return src, tgt
