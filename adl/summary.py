"""The per-layer table of ``adl compile --summary``."""
from __future__ import annotations

from .check.program import Network


def _size(d: int | None) -> str:
    return "?" if d is None else str(d)


def rows(network: Network) -> list[tuple[str, str, str, int]]:
    """(position, layer indented by depth, 'in → out', parameters including sub-layers)."""
    out = []
    for pos, depth, node in network.chain.walk():
        label = "  " * depth + node.label()
        out.append((pos, label, f"{_size(node.d_in)} → {_size(node.d_out)}", node.params))
    return out


def table(network: Network, title: str | None = None) -> str:
    body = rows(network)
    header = ("position", "layer", "size", "params")
    total = ("total", "", f"{_size(network.d_in)} → {_size(network.d_out)}",
             f"{network.params:,}")
    cells = [header] + [(p, lab, s, f"{n:,}") for p, lab, s, n in body] + [total]
    widths = [max(len(r[i]) for r in cells) for i in range(4)]

    def line(r: tuple[str, ...]) -> str:
        return (f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  "
                f"{r[3]:>{widths[3]}}").rstrip()

    rule = "  " + "-" * (sum(widths) + 6)
    text = [title or f"{network.name} ({network.role})", line(header), rule]
    text += [line(r) for r in cells[1:-1]]
    text += [rule, line(total)]
    return "\n".join(text)
