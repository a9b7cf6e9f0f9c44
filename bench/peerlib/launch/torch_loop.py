"""A plain PyTorch baseline for the peer benchmark: ``torch.nn.Transformer`` (pre-norm) with
the recipe's sizes, a tied embedding shared by both sides and the output layer, token-count
batches bucketed by length, Adam with the inverse-sqrt schedule, label smoothing, gradient
clipping, a checkpoint and a validation perplexity every ``valid_every`` updates and the
benchmark's clock (``peerclock.py``) — written out here in a few dozen lines, the way a
researcher would write it by hand.

    python torch_loop.py train --out DIR --spm M --minutes 15 --train SRC TGT --valid SRC TGT
                         --recipe JSON [--device cpu]
    python torch_loop.py decode --out DIR --spm M --checkpoint FILE --beam 4 --input SRC
                         --output HYP
    python torch_loop.py average --inputs FILE... --output FILE

The pieces of ``--train`` are already filtered by the benchmark. Decoding goes through ADL's
search functions over full recomputation of the prefix (``FullRecompute``: nn.Transformer
has no incremental cache), so the decoding time of this column is not comparable with the
others'.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

import sentencepiece as spm
import torch
from peerclock import Clock
from torch import Tensor, nn

from adl.runtime.decode.driver import search_ids
from adl.runtime.decode.search import FullRecompute, SearchOptions

PAD, BOS, EOS = 0, 1, 2


class Seq2Seq(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, ffn: int, dropout: float):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0.0, d**-0.5)
        self.core = nn.Transformer(
            d, heads, layers, layers, ffn, dropout, batch_first=True, norm_first=True
        )
        self.drop = nn.Dropout(dropout)
        self.needs_src_words = False

    def positions(self, n: int, device) -> Tensor:
        pos = torch.arange(n, device=device, dtype=torch.float).unsqueeze(1)  # (T, 1)
        freq = torch.exp(torch.arange(0, self.d, 2, device=device) * (-math.log(1e4) / self.d))
        table = torch.zeros(n, self.d, device=device)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
        return table  # (T, D)

    def inputs(self, ids: Tensor) -> Tensor:
        x = self.embed(ids) * self.d**0.5 + self.positions(ids.size(1), ids.device)
        return self.drop(x)  # (B, T, D)

    def forward(self, src: Tensor, tgt_in: Tensor, words=None) -> Tensor:
        t = tgt_in.size(1)
        causal = torch.ones(t, t, dtype=torch.bool, device=src.device).triu(1)  # True: hidden
        h = self.core(
            self.inputs(src),
            self.inputs(tgt_in),
            tgt_mask=causal,
            src_key_padding_mask=src.eq(PAD),
            tgt_key_padding_mask=tgt_in.eq(PAD),
            memory_key_padding_mask=src.eq(PAD),
        )  # (B, T, D)
        return h @ self.embed.weight.t()  # (B, T, V)


def batches(pairs: list[tuple[list[int], list[int]]], max_tokens: int, rng: random.Random):
    """Index batches of one epoch: shuffled, sorted by length, cut at max_tokens."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    order.sort(key=lambda i: max(len(pairs[i][0]), len(pairs[i][1])))
    out, start, wide = [], 0, 0
    for n, i in enumerate(order):
        cost = max(len(pairs[i][0]), len(pairs[i][1])) + 1
        if n > start and max(wide, cost) * (n - start + 1) > max_tokens:
            out.append(order[start:n])
            start, wide = n, 0
        wide = max(wide, cost)
    out.append(order[start:])
    rng.shuffle(out)
    return out


def pad(seqs: list[list[int]], before: list[int], after: list[int]) -> Tensor:
    rows = [before + s + after for s in seqs]
    out = torch.full((len(rows), max(map(len, rows))), PAD, dtype=torch.long)
    for r, s in enumerate(rows):
        out[r, : len(s)] = torch.tensor(s)
    return out


def build(recipe: dict, vocab: int) -> Seq2Seq:
    return Seq2Seq(
        vocab,
        recipe["d_model"],
        recipe["heads"],
        recipe["layers"],
        recipe["ffn"],
        recipe["dropout"],
    )


def translate(model, sp, lines: list[str], beam: int, len_a: float, len_b: int, device):
    ids = sp.encode(lines)
    options = SearchOptions(beam=beam, len_a=len_a, len_b=len_b)
    found = search_ids(FullRecompute(model), None, ids, options, device)
    return [sp.decode(h[0].tokens) for h in found]


def perplexity(model, sp, src: list[str], ref: list[str], device) -> float:
    """Validation perplexity by teacher forcing, one sentence at a time."""
    model.eval()
    nll = count = 0.0
    with torch.no_grad():
        for s, t in zip(sp.encode(src), sp.encode(ref)):
            logits = model(pad([s], [], [EOS]).to(device), pad([t], [BOS], []).to(device))
            gold = pad([t], [], [EOS]).to(device)
            nll += float(nn.functional.cross_entropy(logits[0], gold[0], reduction="sum"))
            count += gold.numel()
    model.train()
    return math.exp(min(nll / max(count, 1), 100.0))


def train(args) -> None:
    r = json.loads(args.recipe)
    out = Path(args.out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    read = lambda p: Path(p).read_text(encoding="utf-8").splitlines()
    pieces = [[sp.piece_to_id(p) for p in line.split()] for line in read(args.train[0])]
    targets = [[sp.piece_to_id(p) for p in line.split()] for line in read(args.train[1])]
    pairs = list(zip(pieces, targets))
    valid_src, valid_ref = read(args.valid[0]), read(args.valid[1])
    torch.manual_seed(r["seed"])
    rng = random.Random(r["seed"])
    device = torch.device(args.device)
    model = build(r, sp.get_piece_size()).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=r["lr"], betas=r["betas"], eps=r["eps"])
    (out / "recipe.json").write_text(json.dumps({**r, "vocab_size": sp.get_piece_size()}))
    clock = Clock(str(out / "stats.json"), args.minutes)
    step = 0

    def checkpoint() -> None:
        name = f"step-{step}.pt"
        torch.save(model.state_dict(), out / "checkpoints" / name)
        clock.checkpoint(name, step)
        ppl = perplexity(model, sp, valid_src, valid_ref, device)
        print(f"validation at step {step}: ppl {ppl:.4g}", flush=True)

    done = False
    while not done:
        for ids in batches(pairs, r["max_tokens"], rng):
            clock.update_started()
            src = pad([pairs[i][0] for i in ids], [], [EOS]).to(device)
            tgt = [pairs[i][1] for i in ids]
            tgt_in, tgt_out = pad(tgt, [BOS], []).to(device), pad(tgt, [], [EOS]).to(device)
            logits = model(src, tgt_in)
            n = int(tgt_out.ne(PAD).sum())
            loss = nn.functional.cross_entropy(
                logits.flatten(0, 1),
                tgt_out.flatten(),
                ignore_index=PAD,
                label_smoothing=r["label_smoothing"],
                reduction="sum",
            )
            (loss / n).backward()
            if r["clip_norm"]:
                nn.utils.clip_grad_norm_(model.parameters(), r["clip_norm"])
            step += 1
            w = max(r["warmup"], 1)
            lr = r["lr"] * (step / w if step <= w else math.sqrt(w / step))
            for group in opt.param_groups:
                group["lr"] = lr
            opt.step()
            opt.zero_grad(set_to_none=True)
            clock.update_done(n, step)
            if step % 100 == 0:
                print(f"step {step} loss {float(loss) / n:.4f} lr {lr:.3e}", flush=True)
            done = clock.over()
            if step % r["valid_every"] == 0 or done:
                checkpoint()
            if done:
                break
    clock.write()


def load(out: Path, checkpoint: str, device) -> Seq2Seq:
    r = json.loads((out / "recipe.json").read_text())
    model = build(r, r["vocab_size"]).to(device)
    path = out / "checkpoints" / checkpoint
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    return model.eval()


def decode(args) -> None:
    out = Path(args.out)
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    device = torch.device(args.device)
    model = load(out, args.checkpoint, device)
    lines = Path(args.input).read_text(encoding="utf-8").splitlines()
    hyps = translate(model, sp, lines, args.beam, args.len_a, args.len_b, device)
    Path(args.output).write_text("".join(h + "\n" for h in hyps), encoding="utf-8")


def average(args) -> None:
    """The mean of the weights of ``--inputs`` (state dicts), as Sockeye and fairseq do."""
    states = [torch.load(p, map_location="cpu", weights_only=True) for p in args.inputs]
    mean = {k: sum(s[k].float() for s in states) / len(states) for k in states[0]}
    torch.save(mean, args.output)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--spm", required=True)
    t.add_argument("--minutes", type=float, required=True)
    t.add_argument("--train", nargs=2, required=True)
    t.add_argument("--valid", nargs=2, required=True)
    t.add_argument("--recipe", required=True)
    t.add_argument("--device", default="cpu")
    d = sub.add_parser("decode")
    d.add_argument("--out", required=True)
    d.add_argument("--spm", required=True)
    d.add_argument("--checkpoint", required=True, help="a file name in OUT/checkpoints")
    d.add_argument("--beam", type=int, default=4)
    d.add_argument("--len-a", type=float, default=1.5)
    d.add_argument("--len-b", type=int, default=10)
    d.add_argument("--input", required=True)
    d.add_argument("--output", required=True)
    d.add_argument("--device", default="cpu")
    a = sub.add_parser("average")
    a.add_argument("--inputs", nargs="+", required=True)
    a.add_argument("--output", required=True)
    args = p.parse_args()
    {"train": train, "decode": decode, "average": average}[args.command](args)


if __name__ == "__main__":
    main()
