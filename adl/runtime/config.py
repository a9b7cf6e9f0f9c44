"""Run configuration: typed dataclasses, YAML presets, ``--set key=value`` overrides.

A configuration has five sections (``model``, ``data``, ``optim``, ``schedule``, ``train``).
The defaults below are a general starting point; a preset (``adl/runtime/presets/NAME.yaml`` or
any YAML file with the same sections) overrides some of them, and ``--set section.key=value``
(or a bare ``key=value`` when the name is unambiguous) overrides those. Unknown keys are an
error with a did-you-mean. The effective configuration is written to ``RUN/config.yaml``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from adl.errors import did_you_mean
from adl.registry import Hyper
from adl.runtime.errors import ConfigError
from adl.runtime.search_options import DEFAULTS as SEARCH

PRESETS = Path(__file__).resolve().parent / "presets"


@dataclass
class ModelConfig:
    encoder: str | None = None  # encoder .adl file, or one file defining encoder = and decoder =
    decoder: str | None = None  # decoder .adl file (None: the encoder file defines both)
    joint: str | None = None  # a joint (decoder-only) .adl file, instead of encoder/decoder
    d_model: int = Hyper.d_model  # model size, $d_model in the ADL files (adl.Hyper's default)
    heads: int = Hyper.heads  # default attention heads, $heads
    dropout: float = Hyper.dropout  # default dropout rate, $dropout
    vars: dict = field(default_factory=dict)  # other $NAME values the ADL files read
    tie_embeddings: bool = False  # output layer W_o shares the target embedding
    share_embeddings: bool = False  # one embedding for source and target (needs data.joint_vocab)


@dataclass
class DataConfig:
    train: str | None = None  # training pairs in one file: .tsv, .jsonl (.gz too); or:
    train_src: str | None = None  # training source text, one sentence a line
    train_tgt: str | None = None  # training target text, line-aligned with train_src
    valid_src: str | None = None  # validation source (optional: no validation without it)
    valid_tgt: str | None = None  # validation target (reference translations)
    valid: str | None = None  # validation pairs in one file (as data.train), instead
    src_field: str = "src"  # JSONL: the field of the source sentence
    tgt_field: str = "tgt"  # JSONL: the field of the target sentence
    joint_vocab: bool = True  # one sentencepiece model for both languages
    vocab_size: int = 8000  # pieces per sentencepiece model (a soft limit on small data)
    spm_type: str = "unigram"  # sentencepiece model type: unigram | bpe | char | word
    character_coverage: float = 1.0  # sentencepiece: share of characters covered (0.9995 for CJK)
    spm_sentences: int = 2_000_000  # sentences sentencepiece samples for training (0: all)
    spm_model: str | None = None  # an existing joint sentencepiece model (skips training)
    spm_src: str | None = None  # an existing source sentencepiece model
    spm_tgt: str | None = None  # an existing target sentencepiece model
    max_len: int = 256  # drop pairs with more tokens than this on a side (0: keep)
    max_ratio: float = 9.0  # drop pairs with a token ratio above this (0: keep; Moses' 9)
    valid_max: int = 0  # validation sentences used (0: all)
    cache: bool = True  # keep tokenized data and trained sentencepiece models, by content hash
    cache_dir: str | None = None  # where (default: .adl-cache beside the run directory)


@dataclass
class OptimConfig:
    optimizer: str = "adam"  # adam | adamw (decoupled weight decay)
    lr: float = 2e-4  # peak learning rate (the schedule scales it)
    betas: list = field(default_factory=lambda: [0.9, 0.999])  # Adam's beta1, beta2
    eps: float = 1e-8  # Adam's epsilon
    weight_decay: float = 0.0  # L2 (adam) or decoupled (adamw) weight decay
    clip_norm: float = 1.0  # clip the gradient's global norm to this (0: no clipping)
    label_smoothing: float = 0.1  # epsilon of label smoothing (0: plain cross-entropy)


@dataclass
class ScheduleConfig:
    kind: str = "plateau"  # constant | inverse_sqrt | linear | plateau
    warmup: int = 0  # updates of linear warm-up from warmup_init to optim.lr
    warmup_init: float = 0.0  # learning rate at update 0 of the warm-up
    factor: float = 0.7  # plateau: multiply the rate by this when validation stalls
    patience: int = 8  # the rate's: plateau decays after this many without a better ppl
    min_lr: float = 0.0  # the rate never goes below this (plateau, linear)


@dataclass
class TrainConfig:
    max_tokens: int = 4096  # tokens in a batch (padded, the longer side), per process
    max_sentences: int = 0  # sentences in a batch at most (0: no limit)
    accumulate: int = 1  # batches per update (gradient accumulation)
    max_steps: int = 100_000  # updates to run (0: no limit)
    max_epochs: int = 0  # passes over the training data (0: no limit)
    max_minutes: float = 0.0  # stop (with a checkpoint) after this much training time (0: no limit)
    seed: int = 1  # seeds the weights, dropout and batch order
    log_every: int = 100  # updates between training log lines
    valid_every: int = 1000  # updates between validations and checkpoints
    keep_last: int = 5  # step-N.pt checkpoints kept (0: all)
    keep_best: int = 1  # best step-N.pt checkpoints kept besides (for averaging)
    average_last: int = 0  # at the end, averages of the last 2..N checkpoints can become best.pt
    best_metric: str = "ppl"  # best.pt is best by: ppl | loss | acc | bleu | chrf
    patience: int = 0  # the run's: stop after this many without a better best (0: never)
    bleu: bool = True  # greedy-decode the validation set for BLEU and chrF
    valid_bleu_sentences: int = 300  # BLEU/chrF on a fixed sample of this many (0: all)
    # validation's greedy translations: the search options len_a and len_b (their defaults)
    decode_len_a: float = SEARCH.len_a  # at most decode_len_a x source length + decode_len_b
    decode_len_b: int = SEARCH.len_b  # tokens a translation (see decode_len_a)
    max_bad_steps: int = 10  # stop after this many non-finite losses in a row
    device: str = "auto"  # auto (cuda when there is one) | cpu | cuda | cuda:N
    precision: str = "auto"  # auto | fp32 | bf16 | fp16 (training/precision.py: auto picks)
    compile: bool = False  # run the training forward pass through torch.compile
    prefetch: int = 2  # batches a background thread makes ahead (0: made on demand)
    threads: int = 0  # CPU threads of torch (0: torch's default)
    tensorboard: bool = True  # also write TensorBoard logs when tensorboard is installed
    find_unused: bool = False  # DDP: allow parameters without gradients (slower)
    init_from: str | None = None  # start from this run's (best) or checkpoint's weights
    new_tokenizer: bool = False  # with init_from: make a tokenizer, not reuse the source's


SECTIONS = {
    "model": ModelConfig,
    "data": DataConfig,
    "optim": OptimConfig,
    "schedule": ScheduleConfig,
    "train": TrainConfig,
}

CHOICES = {
    ("data", "spm_type"): ("unigram", "bpe", "char", "word"),
    ("optim", "optimizer"): ("adam", "adamw"),
    ("schedule", "kind"): ("constant", "inverse_sqrt", "linear", "plateau"),
    ("train", "best_metric"): ("ppl", "loss", "acc", "bleu", "chrf"),
    ("train", "precision"): ("auto", "fp32", "bf16", "fp16"),
}

# Settings of older versions, read into their successors: (section, old name) ->
# (new name, old value -> new value). ``train.bf16: true`` autocast to bfloat16 on CUDA and
# trained in float32 on the CPU, which is what ``precision: auto`` does on both (on a GPU
# without native bfloat16, auto now takes float16 with a gradient scaler instead).
LEGACY = {
    ("train", "bf16"): ("precision", lambda on: "auto" if on else "fp32"),
}


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False)

    def validate(self) -> Config:
        """Cross-field checks; raises :class:`ConfigError`."""
        for (section, key), allowed in CHOICES.items():
            value = getattr(getattr(self, section), key)
            if value not in allowed:
                raise ConfigError(
                    f"{section}.{key} must be one of {', '.join(allowed)}, not {value!r}"
                )
        positive = [
            ("train", "max_tokens"),
            ("train", "accumulate"),
            ("train", "log_every"),
            ("train", "valid_every"),
            ("train", "max_bad_steps"),
            ("data", "vocab_size"),
            ("model", "d_model"),
            ("model", "heads"),
        ]
        for section, key in positive:
            if getattr(getattr(self, section), key) <= 0:
                raise ConfigError(f"{section}.{key} must be positive")
        for split in ("train", "valid"):
            d = self.data
            if getattr(d, split) and (getattr(d, f"{split}_src") or getattr(d, f"{split}_tgt")):
                raise ConfigError(
                    f"give data.{split} (one file of pairs) or data.{split}_src and "
                    f"data.{split}_tgt, not both"
                )
        for section, key in (("data", "max_len"), ("data", "valid_max")):
            if getattr(getattr(self, section), key) < 0:
                raise ConfigError(f"{section}.{key} must be 0 (no limit) or positive")
        if self.train.average_last == 1 or self.train.average_last < 0:
            raise ConfigError("train.average_last must be 0 (no averaging) or at least 2")
        if 0 < self.train.keep_last < self.train.average_last:
            raise ConfigError(
                f"train.average_last={self.train.average_last} averages checkpoints that "
                f"train.keep_last={self.train.keep_last} deletes: set keep_last to at least "
                f"{self.train.average_last} (or 0: keep all)"
            )
        if self.train.valid_bleu_sentences < 0:
            raise ConfigError("train.valid_bleu_sentences must be 0 (all) or positive")
        if len(self.optim.betas) != 2:
            raise ConfigError("optim.betas takes two numbers, e.g. [0.9, 0.98]")
        if self.optim.lr <= 0:
            raise ConfigError("optim.lr must be positive")
        if not 0 <= self.optim.label_smoothing < 1:
            raise ConfigError("optim.label_smoothing must be in [0, 1)")
        if self.schedule.kind == "linear" and self.train.max_steps <= 0:
            raise ConfigError("schedule.kind=linear decays to train.max_steps: set it")
        if self.train.best_metric in ("bleu", "chrf") and not self.train.bleu:
            raise ConfigError(
                f"train.best_metric={self.train.best_metric} needs "
                "train.bleu=true (greedy decoding of the validation set)"
            )
        t = self.train
        has_valid = self.data.valid_src or self.data.valid
        if not (t.max_steps or t.max_epochs or (t.patience and has_valid)):
            raise ConfigError(
                "the run would never end: set train.max_steps, "
                "train.max_epochs, or train.patience with a validation set"
            )
        if self.model.share_embeddings and not (self.data.joint_vocab or self.data.spm_model):
            raise ConfigError(
                "model.share_embeddings needs one vocabulary: set data.joint_vocab=true"
            )
        return self


def keys() -> list[str]:
    """Every settable key, ``section.name``."""
    return [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]


def _resolve_key(key: str) -> tuple[str, str, str | None]:
    """``section.name`` or an unambiguous bare ``name`` (``model.vars.NAME`` sets a variable)
    -> (section, name, variable)."""
    parts = key.split(".")
    if len(parts) == 3 and parts[:2] == ["model", "vars"] and parts[2]:
        return "model", "vars", parts[2]
    if len(parts) == 2 and parts[0] in SECTIONS and parts[1] in _names(parts[0]):
        return parts[0], parts[1], None
    if len(parts) == 1:
        owners = [s for s in SECTIONS if key in _names(s)]
        if len(owners) == 1:
            return owners[0], key, None
        if len(owners) > 1:
            raise ConfigError(
                f"'{key}' is ambiguous: say " + " or ".join(f"{s}.{key}" for s in owners)
            )
    raise ConfigError(_unknown(key))


def _names(section: str) -> set[str]:
    return {f.name for f in dataclasses.fields(SECTIONS[section])}


def _unknown(key: str) -> str:
    candidates = keys() + [k.split(".", 1)[1] for k in keys()]
    return f"unknown setting '{key}'{_hint(key, candidates)}"


def _hint(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` after a message, or ''."""
    hint = did_you_mean(name, candidates)
    return f" ({hint})" if hint else ""


def _coerce(section: str, name: str, value: Any) -> Any:
    """``value`` checked against the field's type (an int is a valid float)."""
    hint = typing.get_type_hints(SECTIONS[section])[name]
    where = f"{section}.{name}"
    optional = type(None) in typing.get_args(hint)
    base = next((a for a in typing.get_args(hint) if a is not type(None)), hint)
    base = typing.get_origin(base) or base
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{where} cannot be empty")
    if base is bool:
        if isinstance(value, bool):
            return value
    elif base is int:
        value = yaml_number(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif base is float:
        value = yaml_number(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif base is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    elif base is list:
        if isinstance(value, (list, tuple)):
            return [float(v) for v in value]
    elif base is dict:
        if isinstance(value, Mapping):
            return {str(k): v for k, v in value.items()}
    raise ConfigError(f"{where} takes {_type_name(base)}, not {value!r}")


def yaml_number(value: Any) -> Any:
    """A number written as text that YAML 1.1 leaves a string (``1e-3``, ``5_000``)."""
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value.replace("_", ""))
            except ValueError:
                pass
    return value


def _type_name(t: Any) -> str:
    return {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list of numbers",
        dict: "a mapping",
    }.get(t, str(t))


def set_value(config: Config, key: str, value: Any) -> None:
    """Set one setting, checked (``value`` is already parsed, e.g. from YAML)."""
    legacy = _legacy(key)
    if legacy is not None:
        section, old = legacy
        new, convert = LEGACY[legacy]
        setattr(getattr(config, section), new, convert(_coerce_bool(f"{section}.{old}", value)))
        return
    section, name, var = _resolve_key(key)
    target = getattr(config, section)
    if var is not None:
        target.vars[var] = value
        return
    setattr(target, name, _coerce(section, name, value))


def _legacy(key: str) -> tuple[str, str] | None:
    """The (section, old name) of a setting of an older version, or None."""
    parts = key.split(".")
    for section, old in LEGACY:
        if parts == [section, old] or parts == [old]:
            return section, old
    return None


def _coerce_bool(where: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{where} takes true or false, not {value!r}")


def merge(config: Config, data: Mapping[str, Any], origin: str) -> Config:
    """Apply a YAML mapping of sections (a preset, a stored config.yaml) to ``config``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{origin}: expected sections such as 'model:' and 'train:'")
    for section, values in data.items():
        if section == ARCHITECTURES:
            continue  # the files a preset is for: read by preset_files, not a setting
        if section not in SECTIONS:
            raise ConfigError(
                f"{origin}: unknown section '{section}'{_hint(str(section), SECTIONS)}; "
                f"sections: {', '.join(SECTIONS)}"
            )
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise ConfigError(f"{origin}: section '{section}' must hold key: value lines")
        for name, value in values.items():
            if name not in _names(section) and (section, name) not in LEGACY:
                raise ConfigError(f"{origin}: {_unknown(f'{section}.{name}')}")
            try:
                set_value(config, f"{section}.{name}", value)
            except ConfigError as exc:
                raise ConfigError(f"{origin}: {exc}") from None
    return config


def yaml_file(name: str | Path, folder: Path) -> tuple[Path, bool]:
    """(the file ``name`` means, whether it is a bundled name): a path to a YAML file as it
    is given, else ``folder/NAME.yaml`` (the presets', the sweep specs')."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path, False
    return folder / f"{name}.yaml", True


def preset_path(name: str) -> Path:
    """A preset's file: ``NAME`` in adl/runtime/presets/, or a path to a YAML file."""
    found, named = yaml_file(name, PRESETS)
    if not named and not found.is_file():
        raise ConfigError(f"{name}: no such preset file")
    if not found.is_file():
        raise ConfigError(
            f"unknown preset '{name}'{_hint(name, presets())}; presets: {', '.join(presets())}"
        )
    return found


ARCHITECTURES = "architectures"  # a preset's list of the .adl files (globs) it is meant for
ROOT = (
    Path(__file__).resolve().parents[2]
)  # the source tree: presets name files under ROOT/architectures


def preset_files(name: str) -> list[Path]:
    """The .adl files a preset names in its ``architectures:`` list (globs relative to the
    source tree's ``architectures/`` folder), sorted; empty when it names none."""
    path = preset_path(name)
    patterns = (read_yaml(path) or {}).get(ARCHITECTURES) or []
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise ConfigError(f"{path}: '{ARCHITECTURES}' must be a list of file names or globs")
    folder = ROOT / "architectures"
    if patterns and not folder.is_dir():
        raise ConfigError(
            f"preset {name} names files of the source tree's architectures/ folder, which this "
            "installation does not have: give the .adl files"
        )
    found: set[Path] = set()
    for pattern in patterns:
        matches = sorted(folder.glob(pattern))
        if not matches:
            raise ConfigError(f"{path}: '{pattern}' matches no file in {folder}")
        found.update(matches)
    return sorted(found)


def presets() -> list[str]:
    return sorted(p.stem for p in PRESETS.glob("*.yaml"))


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None


def parse_override(item: str) -> tuple[str, Any]:
    """``key=value`` with the value read as YAML (``1e-3``, ``true``, ``[0.9, 0.98]``)."""
    key, eq, text = item.partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"--set takes key=value, not {item!r}")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        value = text
    return key.strip(), value


def load_config(
    preset: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    base: Mapping[str, Any] | None = None,
) -> Config:
    """The defaults, then ``base`` (e.g. a stored config), then a preset, then ``--set`` items."""
    config = Config()
    if base is not None:
        merge(config, base, "config")
    if preset:
        path = preset_path(preset)
        merge(config, read_yaml(path) or {}, str(path))
    return apply_sets(config, overrides)


def apply_sets(config: Config, items: Iterable[str]) -> Config:
    """``config`` with ``--set key=value`` items applied, in order."""
    for item in items:
        key, value = parse_override(item)
        set_value(config, key, value)
    return config


def from_dict(data: Mapping[str, Any], origin: str = "config") -> Config:
    return merge(Config(), data, origin)


def write(config: Config, path: Path) -> None:
    header = (
        "# The effective configuration of this run, written by adl train.\n"
        "# `adl train --resume --out DIR` continues from it; "
        "`--set key=value` changes a setting.\n"
    )
    path.write_text(header + config.to_yaml(), encoding="utf-8")
