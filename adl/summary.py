"""The per-layer table of ``adl compile --summary``."""

from __future__ import annotations

from .analysis.program import CheckedNetwork


def _size(d: int | None) -> str:
    return "?" if d is None else str(d)


def rows(network: CheckedNetwork) -> list[tuple[str, str, str, int]]:
    """(position, layer indented by depth, 'in → out', parameters including sub-layers)."""
    out = []
    for pos, depth, node in network.chain.walk():
        label = "  " * depth + node.label()
        out.append((pos, label, f"{_size(node.d_in)} → {_size(node.d_out)}", node.params))
    return out


def table(network: CheckedNetwork, title: str | None = None) -> str:
    body = rows(network)
    header = ("position", "layer", "size", "params")
    total = ("total", "", f"{_size(network.d_in)} → {_size(network.d_out)}", f"{network.params:,}")
    cells = [header] + [(p, lab, s, f"{n:,}") for p, lab, s, n in body] + [total]
    widths = [max(len(r[i]) for r in cells) for i in range(4)]

    def line(r: tuple[str, ...]) -> str:
        return (
            f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]:>{widths[3]}}"
        ).rstrip()

    rule = "  " + "-" * (sum(widths) + 6)
    text = [title or f"{network.name} ({network.role})", line(header), rule]
    text += [line(r) for r in cells[1:-1]]
    text += [rule, line(total)]
    return "\n".join(text)


def model_rows(
    encoder: CheckedNetwork,
    decoder: CheckedNetwork,
    src_vocab: int,
    tgt_vocab: int,
    tie_embeddings: bool = False,
    share_embeddings: bool = False,
) -> list[tuple[str, int]]:
    """Parameters of a whole encoder-decoder model, as adl.build makes it."""
    d = encoder.hyper.d_model
    rows = [("source embedding E_src", src_vocab * d), ("encoder", encoder.params)]
    if not share_embeddings:
        rows.append(("target embedding E_tgt", tgt_vocab * d))
    rows.append(("decoder", decoder.params))
    out_weight = 0 if tie_embeddings else tgt_vocab * (decoder.d_out or 0)
    rows.append(
        ("output W_o, b_o" + (" (W_o tied)" if tie_embeddings else ""), out_weight + tgt_vocab)
    )
    return rows


def model_table(rows: list[tuple[str, int]], title: str) -> str:
    total = sum(n for _, n in rows)
    width = max(len(name) for name, _ in rows + [("total", 0)])
    digits = len(f"{total:,}")
    lines = [title, f"  {'part':<{width}}  {'params':>{digits}}", "  " + "-" * (width + digits + 2)]
    lines += [f"  {name:<{width}}  {n:>{digits},}" for name, n in rows]
    lines += ["  " + "-" * (width + digits + 2), f"  {'total':<{width}}  {total:>{digits},}"]
    return "\n".join(lines)
