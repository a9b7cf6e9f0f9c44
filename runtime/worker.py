"""What each process started by ``adl train --nproc N`` runs: ``adl train ARGS``.

(``torchrun --nproc_per_node N --no-python adl train ARGS`` does the same by hand.)"""
import sys

from adl.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
