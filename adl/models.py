"""``adl.build``: checked ADL networks -> a PyTorch model that carries its own description.

The model's :class:`ModelSpec` holds the canonical ADL text of each network and every
hyper-parameter, so a checkpoint (``spec.to_dict()`` + ``state_dict``) rebuilds the model
without its files: ``adl.build_from_spec(spec_dict)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .analysis import arg_span, resolve_memory_limit
from .analysis.pairs import pair_problems
from .analysis.program import BYTES_PER_PARAMETER, CheckedNetwork, Program
from .api import TextOrPath, check
from .errors import ADLError, Diagnostic, Note, error
from .limits import MAX_INTEGER, MEMORY_ENV, amount
from .registry import DECODER, ENCODER, JOINT, Hyper
from .roles import roles_in
from .source import Source
from .syntax import ast
from .syntax.printer import to_text


@dataclass(frozen=True)
class ModelSpec:
    """Everything that defines a model's architecture (no weights)."""

    encoder: str | None  # canonical ADL text the encoder comes from
    decoder: str | None  # canonical ADL text the decoder comes from
    src_vocab: int
    tgt_vocab: int
    d_model: int = Hyper.d_model
    heads: int = Hyper.heads
    dropout: float = Hyper.dropout
    vars: Mapping[str, str] = field(default_factory=dict)  # $NAME -> ADL value text
    tie_embeddings: bool = False  # W_o shares the target embedding
    share_embeddings: bool = False  # one embedding for source and target
    pad_id: int = 0
    length_ratio: float | None = None  # mean source / target length of the training data
    names: Mapping[str, str] = field(default_factory=dict)  # role -> file it came from
    joint: str | None = None  # canonical ADL text of a joint network (no encoder)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["vars"], d["names"] = dict(self.vars), dict(self.names)
        return d

    @classmethod
    def from_dict(cls, data: object) -> ModelSpec:
        """A spec from its dict (e.g. one stored in a checkpoint), every field's type checked:
        raises :class:`ADLError` for anything else (any object may come in)."""
        if not isinstance(data, Mapping):
            raise error(f"a model description is a mapping, not {type(data).__name__}")
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise error(
                f"model description has unknown fields: {', '.join(sorted(map(str, unknown)))}"
            )
        problems = [p for k, v in data.items() if (p := _field_problem(k, v)) is not None]
        if problems:
            raise ADLError([error(f"model description: {p}").diagnostics[0] for p in problems])
        return cls(**dict(data))

    def hyper(self) -> dict[str, Any]:
        return dict(
            d_model=self.d_model, heads=self.heads, dropout=self.dropout, vars=dict(self.vars)
        )


_TEXT = ("encoder", "decoder", "joint")
_COUNTS = ("src_vocab", "tgt_vocab", "d_model", "heads")
_FLAGS = ("tie_embeddings", "share_embeddings")


def _field_problem(key: str, value: Any) -> str | None:
    """What is wrong with one field of a stored model description (None: nothing)."""
    if key in _TEXT:
        ok = value is None or isinstance(value, str)
        return None if ok else f"'{key}' must be ADL text or null"
    if key in _COUNTS or key == "pad_id":
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok and (0 if key == "pad_id" else 1) <= value <= MAX_INTEGER
        return (
            None
            if ok
            else f"'{key}' must be a {'non-negative' if key == 'pad_id' else 'positive'} integer"
        )
    if key in _FLAGS:
        return None if isinstance(value, bool) else f"'{key}' must be true or false"
    if key == "dropout":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else "'dropout' must be a number"
    if key == "length_ratio":
        ok = value is None or (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        )
        return None if ok else "'length_ratio' must be a positive number or null"
    if key in ("vars", "names"):
        ok = isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        )
        return None if ok else f"'{key}' must map names to text"
    return None


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


def check_model(
    encoder: TextOrPath,
    decoder: TextOrPath | None = None,
    *,
    d_model: int = Hyper.d_model,
    heads: int = Hyper.heads,
    dropout: float = Hyper.dropout,
    vars: Mapping[str, Any] | None = None,
    max_memory: int | None = None,
) -> tuple[Program, Program]:
    """Check an encoder and a decoder together: the decoder reads the encoder's size, and
    every ``encoder_block=`` of the decoder must name a block the encoder has.

    ``decoder`` may be omitted when ``encoder`` is a file that defines both."""
    options: dict[str, Any] = dict(
        d_model=d_model, heads=heads, dropout=dropout, vars=vars, max_memory=max_memory
    )
    enc = check(encoder, role=ENCODER, **options)
    if decoder is None and DECODER not in roles_in(encoder):
        raise error(f"{enc.source.name} defines no decoder: give the decoder file too")
    dec_source = enc.source if decoder is None else decoder
    dec = check(dec_source, role=DECODER, source_d=enc.network.d_out, **options)
    check_pair(enc, dec)
    return enc, dec


def check_pair(encoder: Program, decoder: Program) -> None:
    """Raise :class:`ADLError` (at the decoder's layers) for every ``encoder_block=`` that
    the encoder's blocks cannot serve."""
    problems = pair_problems(decoder.network, encoder.network)
    if problems:
        raise ADLError(
            [
                Diagnostic(
                    "error",
                    str(refusal),
                    decoder.source,
                    arg_span(node, refusal.at),
                    refusal.hint,
                    (Note("the encoder it is checked with", encoder.source),),
                )
                for node, refusal in problems
            ]
        )


def build(
    encoder: TextOrPath | None = None,
    decoder: TextOrPath | None = None,
    *,
    joint: TextOrPath | None = None,
    src_vocab: int,
    tgt_vocab: int,
    d_model: int = Hyper.d_model,
    heads: int = Hyper.heads,
    dropout: float = Hyper.dropout,
    vars: Mapping[str, Any] | None = None,
    tie_embeddings: bool = False,
    share_embeddings: bool = False,
    pad_id: int = 0,
    length_ratio: float | None = None,
    decode_attention: str | None = None,
    max_memory: int | None = None,
):
    """Build a model from ADL files or text.

    An encoder-decoder model from ``encoder``/``decoder`` (paths or ADL text: a ``*.enc.adl``
    / ``*.dec.adl`` pair, or one file that defines ``encoder =`` and ``decoder =``), or a
    decoder-only joint model from ``joint`` (a ``*.joint.adl`` file or one that defines
    ``joint =``). ``length_ratio`` is the training data's mean source/target length ratio,
    which hard-coded cross attention centres on when it is given no ``ratio=`` (the runtime
    passes it). ``decode_attention`` (``"soft"`` / ``"hard"``) decodes every dot-product
    attention of the decoder with standard attention or with hard retrieval, whatever the
    files say (Xu et al. 2020, Table 4; training is unchanged); ``None`` decodes as written.
    Raises :class:`ADLError` for any problem with the description, with every error of each
    file. Before allocating anything it estimates the model's memory (parameters in float32,
    embeddings and output layer included) and refuses a model above ``max_memory`` bytes
    (default: ``$ADL_MAX_MEMORY``, else 16 GiB)."""
    from .nn import JointModel, Seq2Seq
    from .nn.hard import DECODE_MODES

    if decode_attention is not None and decode_attention not in DECODE_MODES:
        raise error(f"decode_attention must be 'soft' or 'hard', not {decode_attention!r}")

    if encoder is not None and joint is None and decoder is None and JOINT in roles_in(encoder):
        encoder, joint = None, encoder
    if (joint is None) == (encoder is None):
        raise error(
            "adl.build needs an encoder (and a decoder), or a joint network"
            if joint is None
            else "give either joint= or an encoder and decoder"
        )
    for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab), ("pad_id", pad_id)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise error(f"{name} must be an integer, not {value!r}")
    if src_vocab <= 0 or tgt_vocab <= 0:
        raise error(
            f"vocabulary sizes must be positive (src_vocab={src_vocab}, tgt_vocab={tgt_vocab})"
        )
    if not 0 <= pad_id < min(src_vocab, tgt_vocab):
        raise error(f"pad_id={pad_id} is not an id of both vocabularies")
    if length_ratio is not None and not (
        isinstance(length_ratio, (int, float)) and math.isfinite(length_ratio) and length_ratio > 0
    ):
        raise error(f"length_ratio must be a positive number, not {length_ratio!r}")
    if share_embeddings and src_vocab != tgt_vocab:
        raise error("share_embeddings needs one vocabulary: src_vocab and tgt_vocab differ")
    limit = resolve_memory_limit(max_memory)
    options: dict[str, Any] = dict(
        d_model=d_model, heads=heads, dropout=dropout, vars=vars, max_memory=limit
    )
    common: dict[str, Any] = dict(
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        d_model=d_model,
        heads=heads,
        dropout=float(dropout),
        vars={k: _var_text(v) for k, v in (vars or {}).items()},
        tie_embeddings=tie_embeddings,
        share_embeddings=share_embeddings,
        pad_id=pad_id,
        length_ratio=length_ratio,
    )
    if joint is not None:
        program = check(joint, role=JOINT, **options)
        spec = ModelSpec(
            encoder=None,
            decoder=None,
            joint=program.canonical,
            names={JOINT: program.source.name},
            **common,
        )
        _check_whole([program.network], spec, limit, extra=2 * d_model)  # the language embedding
        module, _ = build_network(program, program.network, length_ratio=length_ratio)
        if decode_attention is not None:
            raise error(
                "decode_attention applies to encoder-decoder models (the decoder's attention), "
                "not to a joint model"
            )
        return _whole_model(JointModel, [module], spec)
    assert encoder is not None  # joint is None, so an encoder was given (checked above)
    enc, dec = check_model(encoder, decoder, **options)
    spec = ModelSpec(
        encoder=enc.canonical,
        decoder=dec.canonical,
        names={ENCODER: enc.source.name, DECODER: dec.source.name},
        **common,
    )
    _check_whole([enc.network, dec.network], spec, limit)
    enc_module, blocks = build_network(enc, enc.network, length_ratio=length_ratio)
    dec_module, _ = build_network(
        dec, dec.network, encoder_blocks=blocks, length_ratio=length_ratio
    )
    model = _whole_model(Seq2Seq, [enc_module, dec_module], spec)
    if decode_attention is not None:
        from .nn.hard import set_decode_attention

        set_decode_attention(model, decode_attention)
    return model


def model_bytes(
    networks: list[CheckedNetwork],
    src_vocab: int,
    tgt_vocab: int,
    d_model: int,
    tie_embeddings: bool = False,
    share_embeddings: bool = False,
    extra: int = 0,
) -> tuple[int, int]:
    """(bytes, parameters) of a whole model: its networks, the embeddings and the output
    layer ``W_o z + b_o`` (float32; ``extra`` more parameters)."""
    params = sum(n.params for n in networks) + extra
    params += src_vocab * d_model + (0 if share_embeddings else tgt_vocab * d_model)
    d_out = networks[-1].d_out
    params += tgt_vocab + (0 if tie_embeddings else d_out * tgt_vocab)
    buffers = sum(n.bytes - BYTES_PER_PARAMETER * n.params for n in networks)
    return BYTES_PER_PARAMETER * params + buffers, params


def _check_whole(
    networks: list[CheckedNetwork], spec: ModelSpec, limit: int, extra: int = 0
) -> None:
    """What only the whole model shows: an output layer tied to the target embedding must
    read its size, and the model (``extra`` more parameters) must fit the memory limit."""
    d_out = networks[-1].d_out
    if spec.tie_embeddings and d_out != spec.d_model:
        raise error(
            f"tie_embeddings needs the decoder's output ({d_out}) to be d_model ({spec.d_model})"
        )
    src_vocab, tgt_vocab = spec.src_vocab, spec.tgt_vocab
    need, params = model_bytes(
        networks,
        src_vocab,
        tgt_vocab,
        spec.d_model,
        spec.tie_embeddings,
        spec.share_embeddings,
        extra,
    )
    if need > limit:
        raise error(
            f"the model needs about {amount(need)} for its {params:,} parameters (float32, "
            f"vocabularies {src_vocab:,} / {tgt_vocab:,} included), more than the memory limit "
            f"of {amount(limit)}",
            hint=f"set {MEMORY_ENV} (e.g. {MEMORY_ENV}=64G) or pass max_memory= to allow more",
        )


def _whole_model(cls: type, networks: list[Any], spec: ModelSpec):
    """The model of class ``cls`` (Seq2Seq, JointModel) over built networks, with the
    embeddings and output layer ``spec`` describes."""
    return cls(
        *networks,
        spec.src_vocab,
        spec.tgt_vocab,
        spec.d_model,
        pad_id=spec.pad_id,
        tie_embeddings=spec.tie_embeddings,
        share_embeddings=spec.share_embeddings,
        spec=spec,
    )


def build_network(
    program: Program,
    network: CheckedNetwork,
    encoder_blocks: int = 0,
    length_ratio: float | None = None,
):
    """The module of one checked network, and its number of blocks (top-level repeat copies)."""
    from .nn import Builder
    from .nn.model import Network as NetworkModule

    b = Builder(
        network.role, network.source_d, encoder_blocks=encoder_blocks, length_ratio=length_ratio
    )
    chain = b.network(network.chain)
    if b.problems:  # one per place, though each copy of a repeat meets it
        found = {(node.call.span, message): hint for node, message, hint in b.problems}
        raise ADLError(
            [
                Diagnostic("error", message, program.source, span, hint)
                for (span, message), hint in found.items()
            ]
        )
    module = NetworkModule(chain, network.role, network.d_in, network.d_out, b.blocks)
    return module, b.blocks


def build_from_spec(
    spec: ModelSpec | Mapping[str, Any] | object,
    decode_attention: str | None = None,
    *,
    max_memory: int | None = None,
):
    """Rebuild a model from its description (e.g. the one stored in a checkpoint);
    ``decode_attention`` as in :func:`build`. The description is input like any ADL text:
    every field is type-checked and the networks go through the same bounded check and
    memory estimate as :func:`build` before anything is allocated; raises
    :class:`ADLError`."""
    if not isinstance(spec, ModelSpec):
        spec = ModelSpec.from_dict(spec)
    names = dict(spec.names)
    enc_src = _named(spec.encoder, names.get(ENCODER))
    dec_src = _named(spec.decoder, names.get(DECODER))
    model = build(
        enc_src,
        dec_src,
        joint=_named(spec.joint, names.get(JOINT)),
        src_vocab=spec.src_vocab,
        tgt_vocab=spec.tgt_vocab,
        tie_embeddings=spec.tie_embeddings,
        share_embeddings=spec.share_embeddings,
        pad_id=spec.pad_id,
        length_ratio=spec.length_ratio,
        decode_attention=decode_attention,
        max_memory=max_memory,
        **spec.hyper(),
    )
    model.spec = spec
    return model


def _named(text: str | None, name: str | None):
    if text is None:
        return None
    return Source(text, name or "<checkpoint>")
