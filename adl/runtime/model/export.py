"""``adl export``: what a deployment needs of a run, and nothing else.

    OUT/model.safetensors   the weights (safetensors: tensors only, nothing to execute)
    OUT/model.json          the model: canonical ADL text of each network, sizes, vocabularies
    OUT/joint.model         the sentencepiece model(s) (or src.model and tgt.model)
    OUT/README.md           a card: the architecture, where it came from, its sacrebleu scores
    OUT/ctranslate2/        with --ctranslate2: a CTranslate2 model (see ct2.py)

Loading an export reads JSON and safetensors only: no pickle. The model description in
model.json is input like any ADL text: it goes through ``adl.models.build_from_spec``'s bounded
check before anything is allocated.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adl.runtime.errors import CheckpointError

FORMAT = "adl-export/1"
WEIGHTS, SPEC, CARD = "model.safetensors", "model.json", "README.md"
CT2_DIR = "ctranslate2"
MAX_SPEC_BYTES = 1 << 20  # model.json holds ADL text and a few numbers


def is_export(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by ``adl export``."""
    return Path(path).is_dir() and (Path(path) / SPEC).is_file()


def _write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _out_dir(out: str | Path) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{path}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot create the folder: {exc.strerror}") from None
    return path


def validation_scores(run_dir: Path) -> dict[str, Any] | None:
    """The run's last validation record with BLEU or chrF (metrics.jsonl), or None."""
    metrics = run_dir / "metrics.jsonl"
    if not metrics.is_file():
        return None
    found = None
    for line in metrics.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("split") == "valid" and ("bleu" in record or "chrf" in record):
            found = record
    return found


def export_run(
    run_or_file: str | Path,
    out: str | Path,
    checkpoint: str = "best",
    check: Callable[[Any], Any] | None = None,
) -> Path:
    """Write the export of a run's checkpoint (``checkpoint``: best | last | average | a
    file) into the folder ``out``; returns the folder. ``check(model)``, when given, runs
    before anything is written (a refusal raises and leaves no folder)."""
    from safetensors.torch import save_model

    from adl.runtime.data.tokenizer import Tokenizers
    from adl.runtime.model import checkpoint as ckpt

    path = ckpt.resolve(run_or_file, checkpoint)
    state = ckpt.load(path)
    model = ckpt.model_from_state(state, path)
    tokenizers = Tokenizers.from_state(state["tokenizer"])
    spec = model.spec
    if check is not None:
        check(model)
    target = _out_dir(out)
    run_dir = Path(run_or_file) if Path(run_or_file).is_dir() else None
    scores = validation_scores(run_dir) if run_dir is not None else None
    params = sum(p.numel() for p in model.parameters())
    description = {
        "format": FORMAT,
        "spec": spec.to_dict(),
        "parameters": params,
        "tokenizer": {
            "joint": tokenizers.joint,
            "files": sorted(tokenizers.files()),
            "src_vocab": tokenizers.src_vocab,
            "tgt_vocab": tokenizers.tgt_vocab,
        },
        "source": {"checkpoint": path.name, "step": int(state.get("step", 0))},
        "weights": WEIGHTS,
    }
    fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{WEIGHTS}.", suffix=".tmp")
    os.close(fd)
    save_model(model, tmp, metadata={"format": FORMAT})
    os.replace(tmp, target / WEIGHTS)
    tokenizers.save(target)
    _write_text(target / SPEC, json.dumps(description, indent=2) + "\n")
    _write_text(target / CARD, card(description, scores, run_dir))
    return target


def card(description: dict[str, Any], scores: dict[str, Any] | None, run_dir: Path | None) -> str:
    """README.md of an export: the networks, sizes, origin, and the run's sacrebleu scores."""
    spec, tok = description["spec"], description["tokenizer"]
    lines = ["# ADL translation model", ""]
    origin = f"`{run_dir}`" if run_dir is not None else "a checkpoint file"
    lines += [
        f"Exported by `adl export` from {origin} ({description['source']['checkpoint']}, "
        f"step {description['source']['step']:,}).",
        "",
        f"- parameters: {description['parameters']:,}",
        f"- d_model {spec['d_model']}, heads {spec['heads']}",
        f"- vocabulary: {'joint' if tok['joint'] else 'separate'} sentencepiece, "
        f"{tok['src_vocab']:,} source / {tok['tgt_vocab']:,} target pieces "
        f"({', '.join(tok['files'])})",
        f"- embeddings: {'tied output' if spec['tie_embeddings'] else 'untied output'}"
        f"{', shared source and target' if spec['share_embeddings'] else ''}",
        "",
    ]
    for role in ("encoder", "decoder", "joint"):
        if spec.get(role):
            lines += [f"## {role.capitalize()}", "", "```", spec[role].rstrip(), "```", ""]
    lines += ["## Scores", ""]
    if scores is None:
        lines += ["The run has no validation BLEU (no metrics.jsonl with bleu/chrf).", ""]
    else:
        shown = ", ".join(
            f"{name} {scores[name]:.2f}" for name in ("bleu", "chrf") if name in scores
        )
        lines += [f"sacrebleu on the run's validation set at step {scores['step']:,}: {shown}.", ""]
    lines += [
        "## Use",
        "",
        "```python",
        "import adl",
        'translator = adl.load_model("THIS_FOLDER")',
        'print(translator.translate(["a sentence"]))',
        "```",
        "",
        "or `adl translate --model THIS_FOLDER < input.txt`.",
        "",
    ]
    return "\n".join(lines)


def read_description(folder: Path) -> dict[str, Any]:
    """model.json of an export, its format checked; raises :class:`CheckpointError`."""
    path = folder / SPEC
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read: {exc.strerror}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise CheckpointError(f"{path}: larger than {MAX_SPEC_BYTES:,} bytes: not an ADL export")
    try:
        description = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(description, dict) or description.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an ADL export (no '{FORMAT}' format mark)")
    return description


def load_export(folder: str | Path, decode_attention: str | None = None):
    """``(model, tokenizers)`` of an export folder (the model on the CPU, in eval mode)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_model

    import adl.errors
    import adl.models
    from adl.runtime.data.tokenizer import Tokenizers

    folder = Path(folder)
    description = read_description(folder)
    try:
        model = adl.models.build_from_spec(
            description.get("spec"), decode_attention=decode_attention
        )
    except adl.errors.ADLError as exc:
        raise CheckpointError(
            f"{folder / SPEC}: its model description does not build:\n{exc}"
        ) from None
    weights = folder / WEIGHTS
    if not weights.is_file():
        raise CheckpointError(f"{weights}: no such file")
    try:
        load_model(model, weights, strict=True)
    except (RuntimeError, SafetensorError, OSError) as exc:
        first = str(exc).strip().splitlines()[-1].strip() if str(exc).strip() else ""
        raise CheckpointError(
            f"{weights}: the weights do not fit the model that {SPEC} describes (another "
            f"export's files, or a damaged one){': ' + first if first else ''}"
        ) from None
    return model.eval(), Tokenizers.load(folder)
