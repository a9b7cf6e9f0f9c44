"""Each peer's own virtualenv, created once in a cache folder and reused.

torch is pinned to ours (``torch==2.13.0``, installed first so that pip takes the CPU
build), numpy below 2 (both peers were released against numpy 1). Sockeye installs with
``--no-deps`` (its pins name an older torch); fairseq from PyPI's ``fairseq-fixed``
0.12.3.1 source, built against the installed torch (``--no-build-isolation``). Besides the
packages the benchmark's issue names, importing fairseq 0.12.3 needs scikit-learn (an audio
task imports it at start-up) and tqdm.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TORCH = "torch==2.13.0"
RECIPES = {
    "sockeye": [
        [TORCH],
        ["numpy<2", "sacrebleu", "pyyaml", "sentencepiece"],
        ["--no-deps", "sockeye==3.1.34"],
    ],
    "fairseq": [
        [TORCH],
        ["numpy<2", "cython", "hydra-core", "omegaconf", "bitarray", "regex", "sacrebleu"],
        ["sentencepiece", "pyyaml", "scikit-learn", "tqdm", "setuptools", "wheel"],
        [
            "--no-build-isolation",
            "--no-deps",
            "--no-binary",
            "fairseq-fixed",
            "fairseq-fixed==0.12.3.1",
        ],
    ],
}
CHECK = {
    "sockeye": "import sockeye.train, sockeye.translate, sockeye.average",
    "fairseq": "import fairseq, fairseq_cli.train, fairseq_cli.generate",
}


def ensure(name: str, cache: Path, say=print) -> Path:
    """The virtualenv of peer ``name`` under ``cache``, made when missing; returns its root."""
    root = Path(cache) / name
    stamp = root / ".ready"
    if stamp.is_file():
        return root
    say(f"creating the {name} virtualenv in {root} (once; minutes)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    for args in RECIPES[name]:
        subprocess.run(pip + args, check=True)
    subprocess.run([str(root / "bin" / "python"), "-c", CHECK[name]], check=True)
    stamp.write_text("ok\n")
    return root
