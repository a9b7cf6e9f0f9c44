"""Average fairseq checkpoints: what fairseq's ``scripts/average_checkpoints.py --inputs
FILE... --output FILE`` does (examples/scaling_nmt/README.md: "average the last few
checkpoints"), for a toolkit install that lacks the script: neither PyPI's
``fairseq-fixed`` 0.12.3.1 nor ``fairseq`` 0.12.2 source distribution holds ``scripts/``.

The output is the last input's checkpoint (its settings and training state) with the
``model`` weights replaced by the element-wise mean of every input's (tensors that are not
floating point, if any, are taken from the last input). Written here, not copied.

    python fairseq_average.py --inputs FILE... --output FILE
"""

import argparse

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--output", required=True)
    args = p.parse_args()
    # fairseq's checkpoints hold its settings objects: not loadable with weights_only
    states = [torch.load(f, map_location="cpu", weights_only=False) for f in args.inputs]
    out = states[-1]
    names = list(out["model"])
    for state, path in zip(states, args.inputs):
        if list(state["model"]) != names:
            raise SystemExit(f"{path}: its weights differ from {args.inputs[-1]}'s")
    mean = {}
    for name in names:
        tensors = [s["model"][name] for s in states]
        if tensors[-1].is_floating_point():
            mean[name] = torch.stack([t.float() for t in tensors]).mean(0).to(tensors[-1].dtype)
        else:
            mean[name] = tensors[-1]
    out["model"] = mean
    torch.save(out, args.output)


if __name__ == "__main__":
    main()
