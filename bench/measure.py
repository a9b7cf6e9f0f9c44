"""What the benches share: their common options, the device to measure on, waiting for it,
the memory autograd saves, one layer built from its text, the base Transformer of
architectures/ at a size, and a document's tables rewritten from committed results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch

import adl
from adl.models import build_network

ROOT = Path(__file__).resolve().parent.parent
ARCH = ROOT / "architectures"
if ROOT not in Path(adl.__file__).resolve().parents:
    # a bench of one checkout (a git worktree, say) run with another's package installed
    # measures the other's code: every figure would be the installed tree's
    print(
        f"warning: {ROOT / 'bench'} measures the adl package of {Path(adl.__file__).parent}, "
        f"not of its own tree (run it with PYTHONPATH={ROOT})",
        file=sys.stderr,
    )
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the default of --device


def options(doc: str | None, **defaults) -> argparse.ArgumentParser:
    """A bench's parser, described by the first paragraph of ``doc`` (its module's
    docstring), with the options the layer and model benches share, each given with its
    default: ``lengths`` (comma separated), ``batch``, ``d``, ``heads``,
    ``repeat``, ``device`` (True: the machine's best, DEVICE), ``threads``."""
    helps = {
        "lengths": "sequence lengths, comma separated",
        "batch": "sentences per batch",
        "d": "model size",
        "heads": "attention heads",
        "repeat": "timed repetitions (the median is printed)",
        "threads": "CPU threads",
    }
    unknown = set(defaults) - {*helps, "device"}
    if unknown:
        raise TypeError(f"no shared bench option {', '.join(sorted(unknown))}")
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0] or None)
    for name, value in defaults.items():
        if name == "device":
            ap.add_argument("--device", default=DEVICE, help=f"cpu or cuda (default {DEVICE})")
        elif name == "lengths":
            ap.add_argument("--lengths", default=value, help=f"{helps[name]} (default {value})")
        else:
            ap.add_argument(f"--{name}", type=int, default=value, help=f"{helps[name]} ({value})")
    return ap


def lengths(text: str) -> list[int]:
    """--lengths: ``16,64,256`` -> [16, 64, 256]."""
    return [int(n) for n in text.split(",")]


def sync(device: str) -> None:
    """Waits for the work queued on ``device`` (CUDA runs asynchronously), before a clock."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def saved_bytes(fn, parameters: bool = True) -> int:
    """Bytes of the distinct storages autograd saves while ``fn`` runs; ``parameters``:
    counting the parameters it saves too."""
    storages: dict[int, int] = {}

    def pack(t):
        if parameters or not isinstance(t, torch.nn.Parameter):
            s = t.untyped_storage()
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values())


def one_layer(text: str, role: str, d: int, heads: int) -> torch.nn.Module:
    """The first layer of the network ``text`` in ``role`` (no dropout), in training mode."""
    program = adl.check(text, role=role, d_model=d, heads=heads, dropout=0.0)
    return build_network(program, program.network)[0].chain.layers[0].train()


def transformer(d: int, heads: int, layers: int, vocab: int, **settings) -> torch.nn.Module:
    """The Transformer of architectures/transformer.{enc,dec}.adl with ``layers`` blocks a
    side, a ``vocab``-piece vocabulary on each side and no dropout (``settings``: further
    options of :func:`adl.build`)."""
    return adl.build(
        ARCH / "transformer.enc.adl",
        ARCH / "transformer.dec.adl",
        src_vocab=vocab,
        tgt_vocab=vocab,
        d_model=d,
        heads=heads,
        dropout=0.0,
        vars={"layers": layers},
        **settings,
    )


def update_doc(
    doc: Path, kind: str, render: Callable[[dict], str], root: Path = ROOT, write: bool = True
) -> list[str]:
    """Rewrite the ``<!-- bench KIND RESULT.json -->`` blocks of ``doc`` with ``render`` of
    their committed result files (paths relative to ``root``); returns those that changed."""
    from adl.runtime.docblocks import pattern, rewrite

    blocks = pattern(f"bench {kind}", r"\S+")
    fill = lambda m: render(json.loads((root / m["args"]).read_text("utf-8")))
    return rewrite(doc, blocks, fill, write)
