"""Each paper's systems at the paper's scale (the specs' ``paper_scale:``): sizes, recipe and
parameters, counted on models built on the meta device with the preset's vocabulary.

    python bench/paper_presets.py [--json]

The papers state few parameter counts; where one does, it is printed beside ours and
tests/runtime/test_paper_presets.py holds ours within 2 % of it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import adl.models  # noqa: E402
from adl.runtime.model.build import build_options  # noqa: E402
from adl.runtime.sweep.plan import load  # noqa: E402
from adl.runtime.sweep.variant import PAPER, derive  # noqa: E402

SPECS = ("you2020", "xu2020", "raganato2020", "domhan2018", "fonollosa2019")
RESULT = (
    Path(__file__).resolve().parent.parent / "docs" / "results" / "bench" / "paper_presets.json"
)

# What the papers say of their models' sizes, where they say anything: (spec, system) -> the
# system whose count it should match, and the paper's words.
STATED = {
    ("fonollosa2019", "JOINT"): (
        "TRANSFORMER",
        "§4: the number of layers was chosen to have approximately the same number of total "
        "trainable parameters as the Transformer used for each dataset",
    ),
    ("fonollosa2019", "LOCAL-JOINT"): (
        "TRANSFORMER",
        "§4: as JOINT (the same layers, with locality constraints)",
    ),
}


def parameters(config) -> int:
    """A configuration's model, built on the meta device, counted."""
    m = config.model
    vocab = config.data.vocab_size
    options = build_options(m, vocab, vocab, 1.0)
    with torch.device("meta"):
        if m.joint:
            model = adl.models.build(joint=m.joint, **options)
        else:
            model = adl.models.build(m.encoder, m.decoder, **options)
    return sum(p.numel() for p in model.parameters())


def measure() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SPECS:
            derived = derive(name, Path(tmp), PAPER)
            spec, plan = load(derived, Path(tmp) / "out")
            counted = {}
            for system, config in plan.configs.items():
                counted[system] = parameters(config)
            for system, config in plan.configs.items():
                m, t = config.model, config.train
                stated = STATED.get((name, system))
                rows.append(
                    {
                        "spec": name,
                        "system": system,
                        "preset": spec.preset,
                        "d_model": m.d_model,
                        "heads": m.heads,
                        "vars": dict(m.vars),
                        "dropout": m.dropout,
                        "vocab": config.data.vocab_size,
                        "batch_tokens": t.max_tokens * max(t.accumulate, 1),
                        "schedule": config.schedule.kind,
                        "peak_lr": config.optim.lr,
                        "updates": t.max_steps,
                        "parameters": counted[system],
                        "paper": None
                        if stated is None
                        else {
                            "like": stated[0],
                            "parameters": counted[stated[0]],
                            "says": stated[1],
                        },
                    }
                )
    return rows


def markdown(rows: list[dict]) -> str:
    head = "| spec | system | preset | d_model | heads | vocabulary | tokens an update | updates | parameters | the paper |"
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        paper = "–"
        if r["paper"]:
            ratio = r["parameters"] / r["paper"]["parameters"]
            paper = f"as {r['paper']['like']} ({r['paper']['parameters']:,}): {ratio:.3f}x"
        lines.append(
            f"| {r['spec']} | {r['system']} | `{r['preset']}` | {r['d_model']} | {r['heads']} | "
            f"{r['vocab']:,} | {r['batch_tokens']:,} | {r['updates']:,} | {r['parameters']:,} | {paper} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = measure()
    print(
        json.dumps(rows, indent=1) if args.json else markdown(rows),
        end="" if not args.json else "\n",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
