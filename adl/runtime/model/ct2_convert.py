"""CTranslate2 for the Transformer family: the conversion of ``adl export --ctranslate2``
(``adl translate --engine ctranslate2`` decodes it: :mod:`adl.runtime.decode.ct2_translator`).

An ADL encoder-decoder converts when its networks are what CTranslate2's ``TransformerSpec``
computes: ``pos`` (or ``learn_pos``) first, then layers of ``mh_dot_self_att`` and
``ffl`` (or ``ff -> linear``) sublayers in the encoder, ``mh_dot_self_att``,
``mh_dot_src_att`` and ``ffl`` in the decoder, all pre-norm (``res_nd(...)``, then an optional
final ``norm``) or all post-norm (``res(...) -> norm`` / ``res_d(...) -> norm``). ``dropout``
and ``id`` are skipped (inference). Anything else is refused, naming the layer and where it
is written. The conversion itself is CTranslate2's converter API (``ctranslate2.specs``):

- embeddings are multiplied by √d exactly when ADL's ``pos`` scales its input;
- ADL's sinusoids interleave sin and cos (p[2j] = sin, p[2j+1] = cos) from position 0, so
  the table is given to CTranslate2 explicitly rather than taken from its default;
- ``[W^Q; W^K; W^V]`` (self) and ``[W^K; W^V]`` (source) are already fused as CTranslate2
  wants them; the output projection keeps its bias; the layer norms' epsilon is set.

ctranslate2 is an optional dependency (the ``ctranslate2`` extra).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adl.runtime.errors import ConfigError, UserError

POSITIONS = 1024  # rows of the position table given to CTranslate2 (the longest sentence)


class ConversionError(UserError):
    """A model that CTranslate2's Transformer cannot express."""


def ctranslate2_module():
    """The ctranslate2 package, or a ConfigError that says how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise ConfigError(
            "CTranslate2 is not installed: pip install 'adl[ctranslate2]' (or ctranslate2)"
        ) from None
    return ctranslate2


@dataclass
class Sublayer:
    kind: str  # self | source | ffn
    module: Any  # the attention or feed-forward module
    norm: Any  # its LayerNorm (before it: pre-norm; after the residual: post-norm)
    where: str
    ffn: tuple[Any, Any, str] | None = None  # feed-forward: (first linear, second, activation)


@dataclass
class Side:
    """One network reduced to CTranslate2's terms."""

    positions: Any = None  # the pos / learn_pos module
    sublayers: list[Sublayer] = field(default_factory=list)
    final_norm: Any = None
    pre_norm: bool | None = None


def _where(program, node) -> str:
    line, col = program.source.line_col(node.call.span.start)
    return f"{program.source.name}:{line}:{col}"


def _refuse(program, node, module, why: str) -> ConversionError:
    """'FILE:LINE:COL: layer 'cnn' (encoder layer 2[1].1): why; what converts'."""
    position = getattr(module, "position", "").split()
    layer = f" ({position[0]} layer {position[1]})" if len(position) == 3 else ""
    return ConversionError(
        f"{_where(program, node)}: layer '{node.name}'{layer}: {why}; CTranslate2's "
        "Transformer takes pos/learn_pos, mh_dot_self_att, mh_dot_src_att, ffl (or ff -> "
        "linear), norm and the res_nd(...) / res(...) -> norm residual forms"
    )


def _inner(program, node, module) -> Sublayer:
    """The one attention or feed-forward layer inside a residual (dropout/id skipped)."""
    kept = [
        (n, m)
        for n, m in zip(node.args["chain"].nodes, module.chain.layers)
        if n.name not in ("dropout", "id")
    ]
    names = [n.name for n, _ in kept]
    where = _where(program, node)
    if names in (["mh_dot_self_att"], ["mh_dot_src_att"]):
        inner_node, inner = kept[0]
        _check_attention(program, inner_node, inner)
        kind = "self" if names[0] == "mh_dot_self_att" else "source"
        return Sublayer(kind, inner, None, where)
    if names == ["ffl"]:
        inner_node, inner = kept[0]
        act = _activation(program, inner_node, inner)
        return Sublayer("ffn", inner, None, where, (inner.ff.proj, inner.out, act))
    if names == ["ff", "linear"]:
        (ff_node, ff), (_, linear) = kept
        act = _activation(program, ff_node, ff)
        return Sublayer("ffn", ff, None, where, (ff.proj, linear.proj, act))
    bad = next(
        (
            (n, m)
            for n, m in kept
            if n.name not in ("mh_dot_self_att", "mh_dot_src_att", "ffl", "ff", "linear")
        ),
        kept[0] if kept else (node, module),
    )
    known = ("mh_dot_self_att", "mh_dot_src_att", "ffl", "ff", "linear")
    why = (
        "a residual branch must hold one attention or feed-forward layer"
        if bad[0].name in known
        else "CTranslate2's Transformer has no such layer"
    )
    raise _refuse(program, *bad, why)


def _walk(program, nodes, modules, side: Side, pending: list) -> None:
    for node, module in zip(nodes, modules):
        name = node.name
        if name in ("dropout", "id"):
            continue
        if name in ("pos", "learn_pos"):
            if side.positions is not None or side.sublayers:
                raise _refuse(program, node, module, "positions must come first, once")
            side.positions = module
        elif name == "repeat":
            body = node.args["chain"]
            for copy in module.copies:
                _walk(program, body.nodes, copy.layers, side, pending)
        elif name in ("res_nd", "res", "res_d"):
            if side.positions is None:
                raise _refuse(program, node, module, "the network must start with pos or learn_pos")
            pre = name == "res_nd"
            if side.pre_norm is not None and side.pre_norm != pre:
                raise _refuse(program, node, module, "pre-norm and post-norm residuals are mixed")
            if pending:
                raise _refuse(
                    program, node, module, "a post-norm residual must be followed by norm"
                )
            side.pre_norm = pre
            sub = _inner(program, node, module)
            sub.norm = module.norm if pre else None
            side.sublayers.append(sub)
            if not pre:
                pending.append(((node, module), sub))
        elif name == "norm":
            if pending:
                pending.pop()[1].norm = module.norm
            elif side.pre_norm and side.final_norm is None:
                side.final_norm = module.norm
            else:
                raise _refuse(
                    program, node, module, "a norm must end a post-norm sublayer or the network"
                )
        else:
            raise _refuse(program, node, module, "CTranslate2 has no such layer")
    if pending and nodes is program.network.chain.nodes:
        node, module = pending[0][0]
        raise _refuse(program, node, module, "a post-norm residual must be followed by norm")


def _check_attention(program, node, module) -> None:
    if getattr(module, "window", None) is not None:
        raise _refuse(program, node, module, "a windowed (local) attention")
    if module.retrieves:
        raise _refuse(program, node, module, "hard retrieval attention")
    if getattr(module, "level", None) is not None:
        raise _refuse(program, node, module, "attention to an encoder block other than its output")
    head = module.att // module.heads
    if not math.isclose(module.scale, 1.0 / math.sqrt(head)):
        raise _refuse(program, node, module, "an attention scale other than 1/sqrt(head size)")
    if module.att != module.out.out_features:
        raise _refuse(program, node, module, "att_num_hidden differs from num_hidden")


ACTIVATIONS = ("relu", "gelu", "swish")


def _activation(program, node, module) -> str:
    name = node.args.get("act_type")
    if name not in ACTIVATIONS:
        raise _refuse(program, node, module, f"activation {name} (CTranslate2: relu, gelu, swish)")
    return name


def _side(program, network) -> Side:
    side = Side()
    _walk(program, program.network.chain.nodes, network.chain.layers, side, [])
    if side.positions is None:
        raise ConversionError(
            f"{program.source.name}: the {program.network.role} has no pos/learn_pos"
        )
    return side


def _layers(side: Side, pattern: tuple[str, ...], role: str) -> list[list[Sublayer]]:
    kinds = [s.kind for s in side.sublayers]
    n = len(kinds) // len(pattern)
    if n == 0 or kinds != list(pattern) * n:
        at = next(
            (
                i
                for i, k in enumerate(kinds)
                if i >= len(pattern) * n or k != pattern[i % len(pattern)]
            ),
            0,
        )
        where = side.sublayers[at].where if side.sublayers else role
        raise ConversionError(
            f"{where}: CTranslate2's {role} layer is {' -> '.join(pattern)}; this {role} "
            f"has {' -> '.join(kinds) or 'no sublayers'}"
        )
    return [side.sublayers[i * len(pattern) : (i + 1) * len(pattern)] for i in range(n)]


def sinusoid_table(rows: int, d: int):
    import torch

    from adl.nn.position import sinusoids

    return sinusoids(torch.arange(rows), d)


def _np(t):
    return t.detach().float().cpu().numpy()


def build_spec(model, programs) -> Any:
    """The ``ctranslate2.specs.TransformerSpec`` of an ADL encoder-decoder with weights."""
    ctranslate2_module()
    from ctranslate2.specs import common_spec, transformer_spec

    enc_prog, dec_prog = programs
    enc, dec = _side(enc_prog, model.encoder), _side(dec_prog, model.decoder)
    enc_layers = _layers(enc, ("self", "ffn"), "encoder")
    dec_layers = _layers(dec, ("self", "source", "ffn"), "decoder")

    def heads(layers) -> int:
        found = {s.module.heads for layer in layers for s in layer if s.kind != "ffn"}
        if len(found) != 1:
            raise ConversionError(f"CTranslate2 needs one head count per network, not {found}")
        return found.pop()

    def act(layers) -> Any:
        names = {s.ffn[2] for layer in layers for s in layer if s.ffn is not None}
        if len(names) != 1:
            raise ConversionError(f"CTranslate2 needs one activation per network, not {names}")
        return {
            "relu": common_spec.Activation.RELU,
            "gelu": common_spec.Activation.GELU,
            "swish": common_spec.Activation.SWISH,
        }[names.pop()]

    def stack(kind, side: Side, layers):
        return kind(
            len(layers),
            heads(layers),
            pre_norm=bool(side.pre_norm),
            no_final_norm=side.final_norm is None,
            activation=act(layers),
        )

    spec = transformer_spec.TransformerSpec(
        stack(transformer_spec.TransformerEncoderSpec, enc, enc_layers),
        stack(transformer_spec.TransformerDecoderSpec, dec, dec_layers),
    )
    eps = _epsilon(enc, dec)
    spec.config.layer_norm_epsilon = eps
    spec.config.add_source_eos = True  # ADL's source is x + eos
    spec.config.decoder_start_token = "<s>"
    _inputs(spec.encoder, enc, model.src_embed, model.d_model)
    _inputs(spec.decoder, dec, model.tgt_embed, model.d_model)
    for layer_spec, layer in zip(spec.encoder.layer, enc_layers):
        _attention(layer_spec.self_attention, layer[0], self_attention=True)
        _ffn(layer_spec.ffn, layer[1])
    for layer_spec, layer in zip(spec.decoder.layer, dec_layers):
        _attention(layer_spec.self_attention, layer[0], self_attention=True)
        _attention(layer_spec.attention, layer[1], self_attention=False)
        _ffn(layer_spec.ffn, layer[2])
    for side_spec, side in ((spec.encoder, enc), (spec.decoder, dec)):
        if side.final_norm is not None:
            _norm(side_spec.layer_norm, side.final_norm)
    _linear(spec.decoder.projection, model.output)
    return spec


def _epsilon(*sides: Side) -> float:
    found = set()
    for side in sides:
        norms = [s.norm for s in side.sublayers] + [side.final_norm]
        found |= {n.eps for n in norms if n is not None}
    if len(found) > 1:
        raise ConversionError(
            f"CTranslate2 takes one layer-norm epsilon, and the model has {sorted(found)}"
        )
    return found.pop() if found else 1e-5


def _inputs(side_spec, side: Side, embedding, d_model: int) -> None:
    from adl.nn.position import LearnedPositions

    embeddings = side_spec.embeddings
    embeddings = embeddings[0] if isinstance(embeddings, list) else embeddings  # encoder: a list
    embeddings.weight = _np(embedding.weight)
    if isinstance(side.positions, LearnedPositions):
        side_spec.scale_embeddings = False
        side_spec.position_encodings.encodings = _np(side.positions.embed.weight)
    else:
        side_spec.scale_embeddings = side.positions.scale != 1.0
        side_spec.position_encodings.encodings = _np(sinusoid_table(POSITIONS, d_model))


def _linear(linear_spec, linear) -> None:
    linear_spec.weight = _np(linear.weight)
    if linear.bias is not None:
        linear_spec.bias = _np(linear.bias)


def _norm(norm_spec, norm) -> None:
    norm_spec.gamma = _np(norm.weight)
    norm_spec.beta = _np(norm.bias)


def _attention(att_spec, sub: Sublayer, self_attention: bool) -> None:
    m = sub.module
    if self_attention:
        _linear(att_spec.linear[0], m.qkv)  # [W^Q; W^K; W^V], as CTranslate2 fuses them
    else:
        _linear(att_spec.linear[0], m.q)
        _linear(att_spec.linear[1], m.kv)  # [W^K; W^V]
    _linear(att_spec.linear[-1], m.out)
    _norm(att_spec.layer_norm, sub.norm)


def _ffn(ffn_spec, sub: Sublayer) -> None:
    assert sub.ffn is not None, "a feed-forward sublayer carries its linears"
    first, second, _ = sub.ffn
    _linear(ffn_spec.linear_0, first)
    _linear(ffn_spec.linear_1, second)
    _norm(ffn_spec.layer_norm, sub.norm)


def _programs(spec):
    """The checked encoder and decoder of a model spec (node positions for messages)."""
    import adl.models
    import adl.nn
    from adl.source import Source

    names = dict(spec.names)
    return adl.models.check_model(
        Source(spec.encoder, names.get("encoder") or "<encoder>"),
        Source(spec.decoder, names.get("decoder") or "<decoder>"),
        **spec.hyper(),
    )


def convertible(model) -> Any:
    """The CTranslate2 spec of a built model, or the ConversionError that names the first
    layer CTranslate2 has no equivalent of (and where it is)."""
    ctranslate2_module()
    if model.spec.joint is not None:
        raise ConversionError(
            "a joint (decoder-only) model has no CTranslate2 Transformer equivalent here"
        )
    return build_spec(model, _programs(model.spec))


def export_ctranslate2(folder: str | Path, quantization: str = "float32") -> Path:
    """Convert an ``adl export`` folder's model into FOLDER/ctranslate2 (weights of type
    ``quantization``); returns that folder."""
    ct2 = ctranslate2_module()
    from ctranslate2.converters.converter import Converter

    from adl.runtime.model.export import CT2_DIR, load_export

    folder = Path(folder)
    model, tokenizers = load_export(folder)
    spec = convertible(model)
    src = [tokenizers.src.id_to_piece(i) for i in range(tokenizers.src_vocab)]
    tgt = [tokenizers.tgt.id_to_piece(i) for i in range(tokenizers.tgt_vocab)]
    spec.register_source_vocabulary(src)
    spec.register_target_vocabulary(tgt)

    class Ready(Converter):
        def _load(self):
            return spec

    out = folder / CT2_DIR
    try:
        Ready().convert(str(out), quantization=quantization, force=True)
    except (ValueError, RuntimeError) as exc:
        raise ConversionError(f"CTranslate2 refused the model: {exc}") from None
    (out / "adl.json").write_text(
        json.dumps({"quantization": quantization, "ctranslate2": ct2.__version__}) + "\n"
    )
    return out
