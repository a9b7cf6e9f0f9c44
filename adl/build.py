"""``adl.build``: checked ADL networks -> a PyTorch model that carries its own description.

The model's :class:`ModelSpec` holds the canonical ADL text of each network and every
hyper-parameter, so a checkpoint (``spec.to_dict()`` + ``state_dict``) rebuilds the model
without its files: ``adl.build_from_spec(spec_dict)``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .api import TextOrPath, check, load
from .check.program import Network, Program
from .errors import ADLError, Diagnostic, error
from .registry import DECODER, ENCODER, JOINT
from .syntax import ast
from .syntax.printer import to_text


@dataclass(frozen=True)
class ModelSpec:
    """Everything that defines a model's architecture (no weights)."""

    encoder: str | None               # canonical ADL text the encoder comes from
    decoder: str | None               # canonical ADL text the decoder comes from
    src_vocab: int
    tgt_vocab: int
    d_model: int = 512
    heads: int = 8
    dropout: float = 0.1
    vars: Mapping[str, str] = field(default_factory=dict)  # $NAME -> ADL value text
    tie_embeddings: bool = False      # W_o shares the target embedding
    share_embeddings: bool = False    # one embedding for source and target
    pad_id: int = 0
    length_ratio: float | None = None  # mean source / target length of the training data
    names: Mapping[str, str] = field(default_factory=dict)  # role -> file it came from
    joint: str | None = None          # canonical ADL text of a joint network (no encoder)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["vars"], d["names"] = dict(self.vars), dict(self.names)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ModelSpec":
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise error(f"model description has unknown fields: {', '.join(sorted(unknown))}")
        return cls(**dict(data))

    def hyper(self) -> dict[str, Any]:
        return dict(d_model=self.d_model, heads=self.heads, dropout=self.dropout,
                    vars=dict(self.vars))


def _var_text(value: Any) -> str:
    """A variable's value as ADL text (it is read back with adl.parse_value)."""
    if isinstance(value, ast.Chain):
        return to_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value  # already ADL text (a symbol, a number, a chain, or a quoted string)
    raise TypeError(f"unsupported variable value {value!r}")


def check_model(encoder: TextOrPath, decoder: TextOrPath | None = None, *, d_model: int = 512,
                heads: int = 8, dropout: float = 0.1,
                vars: Mapping[str, Any] | None = None) -> tuple[Program, Program]:
    """Check an encoder and a decoder together (the decoder reads the encoder's size).

    ``decoder`` may be omitted when ``encoder`` is a file that defines both."""
    options = dict(d_model=d_model, heads=heads, dropout=dropout, vars=vars)
    enc = check(encoder, role=ENCODER, **options)
    if decoder is None:
        if DECODER not in _roles(encoder):
            raise error(f"{enc.source.name} defines no decoder: give the decoder file too")
        decoder = enc.source
    dec = check(decoder, role=DECODER, source_d=enc.network.d_out, **options)
    return enc, dec


def _roles(source: TextOrPath) -> set[str]:
    """The roles a file holds: its encoder/decoder/joint definitions, or its name's role."""
    from .check import role_from_name
    from .syntax.parser import parse_source

    src = load(source)
    tree = parse_source(src)
    roles = {d.name for d in tree.definitions}
    if tree.network is not None and role_from_name(src.name):
        roles.add(role_from_name(src.name))
    return roles


def build(encoder: TextOrPath | None = None, decoder: TextOrPath | None = None, *,
          joint: TextOrPath | None = None, src_vocab: int, tgt_vocab: int, d_model: int = 512,
          heads: int = 8, dropout: float = 0.1, vars: Mapping[str, Any] | None = None,
          tie_embeddings: bool = False, share_embeddings: bool = False, pad_id: int = 0,
          length_ratio: float | None = None):
    """Build a model from ADL files or text.

    An encoder-decoder model from ``encoder``/``decoder`` (paths or ADL text: a ``*.enc.adl``
    / ``*.dec.adl`` pair, or one file that defines ``encoder =`` and ``decoder =``), or a
    decoder-only joint model from ``joint`` (a ``*.joint.adl`` file or one that defines
    ``joint =``). ``length_ratio`` is the training data's mean source/target length ratio,
    which hard-coded cross attention centres on when it is given no ``ratio=`` (the runtime
    passes it). Raises :class:`ADLError` for any problem with the description, with every
    error of each file."""
    from .nn import JointModel, Seq2Seq

    if encoder is not None and joint is None and decoder is None and JOINT in _roles(encoder):
        encoder, joint = None, encoder
    if (joint is None) == (encoder is None):
        raise error("adl.build needs an encoder (and a decoder), or a joint network"
                    if joint is None else "give either joint= or an encoder and decoder")
    if src_vocab <= 0 or tgt_vocab <= 0:
        raise error(f"vocabulary sizes must be positive (src_vocab={src_vocab}, "
                    f"tgt_vocab={tgt_vocab})")
    if share_embeddings and src_vocab != tgt_vocab:
        raise error("share_embeddings needs one vocabulary: src_vocab and tgt_vocab differ")
    options = dict(d_model=d_model, heads=heads, dropout=dropout, vars=vars)
    common = dict(src_vocab=src_vocab, tgt_vocab=tgt_vocab, d_model=d_model, heads=heads,
                  dropout=float(dropout), vars={k: _var_text(v) for k, v in (vars or {}).items()},
                  tie_embeddings=tie_embeddings, share_embeddings=share_embeddings,
                  pad_id=pad_id, length_ratio=length_ratio)
    if joint is not None:
        program = check(joint, role=JOINT, **options)
        _check_tie(tie_embeddings, program.network.d_out, d_model)
        module, _ = build_network(program, program.network, length_ratio=length_ratio)
        spec = ModelSpec(encoder=None, decoder=None, joint=program.canonical,
                         names={JOINT: program.source.name}, **common)
        return JointModel(module, src_vocab, tgt_vocab, d_model, pad_id, tie_embeddings,
                          share_embeddings, spec)
    enc, dec = check_model(encoder, decoder, **options)
    _check_tie(tie_embeddings, dec.network.d_out, d_model)
    enc_module, blocks = build_network(enc, enc.network, length_ratio=length_ratio)
    dec_module, _ = build_network(dec, dec.network, encoder_blocks=blocks,
                                  length_ratio=length_ratio)
    spec = ModelSpec(encoder=enc.canonical, decoder=dec.canonical,
                     names={ENCODER: enc.source.name, DECODER: dec.source.name}, **common)
    return Seq2Seq(enc_module, dec_module, src_vocab, tgt_vocab, d_model, pad_id,
                   tie_embeddings, share_embeddings, spec)


def _check_tie(tie: bool, d_out: int, d_model: int) -> None:
    if tie and d_out != d_model:
        raise error(f"tie_embeddings needs the decoder's output ({d_out}) to be d_model "
                    f"({d_model})")


def build_network(program: Program, network: Network, encoder_blocks: int = 0,
                  length_ratio: float | None = None):
    """The module of one checked network, and its number of blocks (top-level repeat copies)."""
    from .nn import Builder
    from .nn.model import Network as NetworkModule

    b = Builder(network.role, network.source_d, encoder_blocks=encoder_blocks,
                length_ratio=length_ratio)
    chain = b.network(network.chain)
    if b.problems:  # one per place, though each copy of a repeat meets it
        found = {(node.call.span, message): hint for node, message, hint in b.problems}
        raise ADLError([Diagnostic("error", message, program.source, span, hint)
                        for (span, message), hint in found.items()])
    module = NetworkModule(chain, network.role, network.d_in, network.d_out, b.blocks)
    return module, b.blocks


def build_from_spec(spec: ModelSpec | Mapping[str, Any]):
    """Rebuild a model from its description (e.g. the one stored in a checkpoint)."""
    if not isinstance(spec, ModelSpec):
        spec = ModelSpec.from_dict(spec)
    names = dict(spec.names)
    enc_src = _named(spec.encoder, names.get(ENCODER))
    dec_src = _named(spec.decoder, names.get(DECODER))
    model = build(enc_src, dec_src, joint=_named(spec.joint, names.get(JOINT)),
                  src_vocab=spec.src_vocab, tgt_vocab=spec.tgt_vocab,
                  tie_embeddings=spec.tie_embeddings, share_embeddings=spec.share_embeddings,
                  pad_id=spec.pad_id, length_ratio=spec.length_ratio, **spec.hyper())
    model.spec = spec
    return model


def _named(text: str | None, name: str | None):
    from .source import Source

    if text is None:
        return None
    return Source(text, name or "<checkpoint>")
