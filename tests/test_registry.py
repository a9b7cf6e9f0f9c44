"""The registry: every Domhan §2.3 layer, each documented from its own signature."""

import inspect

import pytest

import adl
from adl.registry import REGISTRY, ROLES, spec_of
from adl.types import ChainType, ChoiceType, SizeType

DOMHAN = [
    "dropout",
    "pos",
    "learn_pos",
    "linear",
    "ff",
    "ffl",
    "cnn",
    "id",
    "concat",
    "rnn",
    "birnn",
    "mh_dot_self_att",
    "mh_dot_src_att",
    "dot_src_att",
    "mh_dot_att",
    "mlp_att",
    "mlp_src_att",
    "norm",
    "res",
    "res_d",
    "res_nd",
    "highway",
    "repeat",
]


@pytest.mark.parametrize("name", DOMHAN)
def test_every_domhan_layer_is_registered(name):
    assert REGISTRY.get(name) is not None


@pytest.mark.parametrize("spec", list(REGISTRY), ids=lambda s: s.name)
def test_entries_come_from_the_signature(spec):
    sig = inspect.signature(spec.rule)
    names = [p for p in sig.parameters][1:]
    assert [p.name for p in spec.params] == names
    for p in spec.params:
        assert p.doc, f"{spec.name}.{p.name} has no docstring line"
        py = sig.parameters[p.name]
        if py.default is not inspect.Parameter.empty:
            assert p.default == py.default
    assert spec.summary and spec.size_rule
    assert set(spec.roles) <= set(ROLES)
    if set(spec.roles) != set(ROLES):
        assert spec.why, "a refused role needs its reason"


def test_types_and_aliases_are_read_from_annotations():
    ff = REGISTRY.get("ff")
    assert isinstance(ff.param("num_hidden").type, SizeType)
    assert ff.param("d_o") is ff.param("num_hidden")  # paper spelling
    assert ff.param("act") is ff.param("act_type")  # Sockeye: act_type
    assert isinstance(ff.param("act_type").type, ChoiceType)
    assert isinstance(REGISTRY.get("res").param("chain").type, ChainType)
    assert REGISTRY.get("mh_dot_att") is REGISTRY.get("mh_dot_src_att")
    assert REGISTRY.get("mlp_att") is REGISTRY.get("mlp_src_att")
    assert REGISTRY.get("concat").params[0].variadic


@pytest.mark.parametrize(
    "name, of, dropped",
    [
        ("hard_self_att", "mh_dot_self_att", {"dropout", "window"}),
        ("hard_src_att", "mh_dot_src_att", {"dropout"}),
    ],
)
def test_a_variant_has_the_rule_of_its_layer_but_the_dropped_arguments(name, of, dropped):
    hard, soft = REGISTRY.get(name), REGISTRY.get(of)
    assert hard.family == "hard" and hard.name == name

    def entries(params):
        return [(p.name, p.default, p.aliases, p.doc, type(p.type), p.type.label) for p in params]

    assert entries(p for p in soft.params if p.name not in dropped) == entries(hard.params)
    assert {p.name for p in hard.params}.isdisjoint(dropped)
    assert hard.size_rule == soft.size_rule and hard.summary != soft.summary
    assert not any(f"    {d}:" in hard.doc for d in dropped)  # nor their lines
    assert (
        adl.check(f"{name}(heads=4)", "decoder", source_d=96).params
        == adl.check(f"{of}(heads=4)", "decoder", source_d=96).params
    )


def test_a_variant_cannot_drop_an_argument_its_layer_lacks():
    from adl.registry import variant

    with pytest.raises(TypeError, match="mh_dot_self_att has no argument wide"):
        variant(REGISTRY.get("mh_dot_self_att").rule, "x_att", "X.", drop=("wide",))
    assert "x_att" not in REGISTRY


def test_a_layer_without_argument_docs_is_refused():
    from adl.registry import LayerInput, LayerOutput

    def bad(h: LayerInput, /, size: int = 3) -> LayerOutput:
        """No argument section."""
        return LayerOutput(h.d)

    with pytest.raises(TypeError, match="no line in the docstring"):
        spec_of(bad)


@pytest.mark.parametrize(
    "text,params",
    [
        ("linear(100)", 512 * 100 + 100),
        ("linear(100, no_bias=true)", 512 * 100),
        ("ff(100)", 512 * 100 + 100),
        ("ff(100, glu)", 512 * 200 + 200),
        ("ffl", 512 * 2048 + 2048 + 2048 * 512 + 512),
        ("cnn(k=5)", 5 * 512 * 512 + 512),
        ("cnn(glu)", 3 * 512 * 1024 + 1024),
        ("rnn", 4 * 512 * (512 + 512) + 8 * 512),
        ("rnn(cell=gru)", 3 * 512 * 1024 + 6 * 512),
        ("birnn", 2 * (4 * 256 * (512 + 256) + 8 * 256)),
        ("norm", 1024),
        ("learn_pos(max_len=100)", 100 * 512),
        ("mh_dot_self_att", 4 * (512 * 512 + 512)),
        ("highway(ffl)", 512 * 512 + 512 + 512 * 2048 + 2048 + 2048 * 512 + 512),
        ("repeat(3, norm)", 3 * 1024),
        ("concat(id, ff(100))", 512 * 100 + 100),
    ],
)
def test_parameter_counts_by_hand(text, params):
    assert adl.check(f"{text}", role="encoder").network.params == params


def test_source_attention_counts_read_the_source_size():
    net = adl.check("mh_dot_src_att", role="decoder", source_d=256).network
    assert net.params == (512 * 512 + 512) + 2 * (256 * 512 + 512) + (512 * 512 + 512)
    net = adl.check("mlp_att(num_hidden=64)", role="decoder", source_d=256).network
    assert net.d_out == 256 and net.params == 512 * 64 + 64 + 256 * 64 + 64


def test_every_source_attention_is_a_decoder_layer_with_one_reason():
    from adl.registry import DECODER, SOURCE_WHY

    over_source = [s for s in REGISTRY if s.attends_source]
    assert {s.name for s in over_source} >= {"mh_dot_src_att", "gauss_src_att", "hard_src_att"}
    for spec in over_source:
        assert spec.roles == {DECODER} and spec.why == SOURCE_WHY, spec.name


def test_a_source_attention_cannot_be_given_other_roles():
    from adl.registry import layer

    with pytest.raises(TypeError, match="belongs to the decoder only"):
        layer(roles=("encoder", "decoder"), attends_source=True)
