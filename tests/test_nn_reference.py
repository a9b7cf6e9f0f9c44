"""Compiled modules against independent references: torch's own modules and the paper's formulas."""

import math

import pytest
import torch
from models import TRANSFORMER
from torch import nn

import adl
from adl.nn import Context, Memory
from adl.nn.position import SinusoidalPositions

D, H, FF, LAYERS = 64, 4, 256, 2


def build_network(text, role, d=D, heads=H, source_d=None):
    from adl.models import build_network as build

    program = adl.check(text, role=role, d_model=d, heads=heads, dropout=0.0, source_d=source_d)
    return build(program, program.network)[0]


def copy_mha(ours_qkv, ours_out, ref: nn.MultiheadAttention):
    with torch.no_grad():
        ours_qkv.weight.copy_(ref.in_proj_weight)
        ours_qkv.bias.copy_(ref.in_proj_bias)
        ours_out.weight.copy_(ref.out_proj.weight)
        ours_out.bias.copy_(ref.out_proj.bias)


def test_self_attention_equals_torch_multihead_attention():
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    enc = build_network("mh_dot_self_att", "encoder")
    dec = build_network("mh_dot_self_att", "decoder")
    for net in (enc, dec):
        att = net.chain.layers[0]
        copy_mha(att.qkv, att.out, ref)
    x = torch.randn(3, 7, D)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[1, 4:] = True
    expected, _ = ref(x, x, x, key_padding_mask=pad, need_weights=False)
    got = enc(x, Context("encoder", pad=pad))
    torch.testing.assert_close(got[~pad], expected[~pad], rtol=1e-5, atol=1e-5)
    causal = nn.Transformer.generate_square_subsequent_mask(7)
    expected, _ = ref(x, x, x, attn_mask=causal, need_weights=False)
    torch.testing.assert_close(dec(x, Context("decoder")), expected, rtol=1e-5, atol=1e-5)


def test_source_attention_equals_torch_multihead_attention():
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    net = build_network("mh_dot_src_att", "decoder")
    att = net.chain.layers[0]
    with torch.no_grad():
        att.q.weight.copy_(ref.in_proj_weight[:D])
        att.q.bias.copy_(ref.in_proj_bias[:D])
        att.kv.weight.copy_(ref.in_proj_weight[D:])
        att.kv.bias.copy_(ref.in_proj_bias[D:])
        att.out.weight.copy_(ref.out_proj.weight)
        att.out.bias.copy_(ref.out_proj.bias)
    x, u = torch.randn(2, 5, D), torch.randn(2, 9, D)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[0, 6:] = True
    expected, _ = ref(x, u, u, key_padding_mask=pad, need_weights=False)
    got = net(x, Context("decoder", memory=Memory(u, pad)))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_dot_src_att_scale():
    """dot_src_att(s=1) is unscaled: softmax(Q K^T) V; the default scale is 1/√d."""
    torch.manual_seed(0)
    x, u = torch.randn(1, 3, D), torch.randn(1, 4, D)
    for s, scale in ((1, 1.0), (None, 1 / math.sqrt(D))):
        text = "dot_src_att(s=1)" if s == 1 else "dot_src_att"
        att = build_network(text, "decoder").chain.layers[0]
        q, (k, v) = att.q(x), att.kv(u).chunk(2, -1)
        expected = att.out(torch.softmax(q @ k.transpose(1, 2) * scale, -1) @ v)
        got = att(x, Context("decoder", memory=Memory(u, None)))
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_pos_values_equal_the_formula():
    """pos(h_t) = √d h_t + p_t, p_{t,2j} = sin(t/10000^{2j/d}), p_{t,2j+1} = cos(t/10000^{2j/d})."""
    d, T = 16, 11
    layer = SinusoidalPositions(d, dropout=0.0, scale_inputs=True, num_embed=None)
    h = torch.randn(1, T, d)
    got = layer(h, Context("encoder"))
    for t in range(T):
        for j in range(d // 2):
            angle = t / 10000 ** (2 * j / d)
            assert got[0, t, 2 * j].item() == pytest.approx(
                math.sqrt(d) * h[0, t, 2 * j].item() + math.sin(angle), abs=1e-5
            )
            assert got[0, t, 2 * j + 1].item() == pytest.approx(
                math.sqrt(d) * h[0, t, 2 * j + 1].item() + math.cos(angle), abs=1e-5
            )
    # in incremental decoding, position t is the cache's offset
    from adl.nn import DecodeState

    state = DecodeState()
    state.offset = 5
    step = layer(h[:, 5:6], Context("decoder", state=state))
    torch.testing.assert_close(step, got[:, 5:6])


def sinusoid_table(T, d):
    pe = torch.zeros(T, d)
    for t in range(T):
        for j in range(0, d, 2):
            pe[t, j] = math.sin(t / 10000 ** (j / d))
            pe[t, j + 1] = math.cos(t / 10000 ** (j / d))
    return pe


def transformer_pair():
    t_enc = f"res_nd(mh_dot_self_att) -> res_nd(ffl({FF}))"
    t_dec = f"res_nd(mh_dot_self_att) -> res_nd(mh_dot_src_att) -> res_nd(ffl({FF}))"
    return (
        f"pos -> repeat({LAYERS}, {t_enc}) -> norm",
        f"pos -> repeat({LAYERS}, {t_dec}) -> norm",
    )


def copy_into_torch(model, ref: nn.Transformer):
    enc_copies = model.encoder.chain.layers[1].copies
    dec_copies = model.decoder.chain.layers[1].copies
    with torch.no_grad():
        for ours, theirs in zip(enc_copies, ref.encoder.layers):
            att, ff = ours.layers[0], ours.layers[1]
            _copy_mha_into(att.chain.layers[0], theirs.self_attn)
            _copy_norm(att.norm, theirs.norm1)
            _copy_ff(ff.chain.layers[0], theirs)
            _copy_norm(ff.norm, theirs.norm2)
        for ours, theirs in zip(dec_copies, ref.decoder.layers):
            sa, ca, ff = ours.layers
            _copy_mha_into(sa.chain.layers[0], theirs.self_attn)
            src = ca.chain.layers[0]
            theirs.multihead_attn.in_proj_weight.copy_(torch.cat([src.q.weight, src.kv.weight]))
            theirs.multihead_attn.in_proj_bias.copy_(torch.cat([src.q.bias, src.kv.bias]))
            theirs.multihead_attn.out_proj.weight.copy_(src.out.weight)
            theirs.multihead_attn.out_proj.bias.copy_(src.out.bias)
            _copy_norm(sa.norm, theirs.norm1)
            _copy_norm(ca.norm, theirs.norm2)
            _copy_ff(ff.chain.layers[0], theirs)
            _copy_norm(ff.norm, theirs.norm3)
        _copy_norm(model.encoder.chain.layers[2].norm, ref.encoder.norm)
        _copy_norm(model.decoder.chain.layers[2].norm, ref.decoder.norm)


def _copy_mha_into(ours, theirs):
    theirs.in_proj_weight.copy_(ours.qkv.weight)
    theirs.in_proj_bias.copy_(ours.qkv.bias)
    theirs.out_proj.weight.copy_(ours.out.weight)
    theirs.out_proj.bias.copy_(ours.out.bias)


def _copy_norm(ours, theirs):
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


def _copy_ff(ours, theirs):
    theirs.linear1.weight.copy_(ours.ff.proj.weight)
    theirs.linear1.bias.copy_(ours.ff.proj.bias)
    theirs.linear2.weight.copy_(ours.out.weight)
    theirs.linear2.bias.copy_(ours.out.bias)


def test_transformer_equals_torch_transformer():
    """The Transformer .adl pair = nn.Transformer(norm_first=True) plus embeddings, to 1e-5."""
    torch.manual_seed(0)
    enc, dec = transformer_pair()
    model = adl.build(enc, dec, src_vocab=40, tgt_vocab=50, d_model=D, heads=H, dropout=0.0)
    ref = nn.Transformer(D, H, LAYERS, LAYERS, FF, dropout=0.0, batch_first=True, norm_first=True)
    copy_into_torch(model, ref)
    assert sum(p.numel() for p in model.encoder.parameters()) + sum(
        p.numel() for p in model.decoder.parameters()
    ) == sum(p.numel() for p in ref.parameters())
    src = torch.randint(4, 40, (3, 9))
    src[2, 6:] = 0
    tgt = torch.randint(4, 50, (3, 7))
    model.train(), ref.train()  # dropout is 0; train mode keeps torch off its inference fast path
    x = model.src_embed(src) * math.sqrt(D) + sinusoid_table(9, D)
    y = model.tgt_embed(tgt) * math.sqrt(D) + sinusoid_table(7, D)
    z = ref(
        x,
        y,
        src_key_padding_mask=src.eq(0),
        memory_key_padding_mask=src.eq(0),
        tgt_mask=nn.Transformer.generate_square_subsequent_mask(7),
        tgt_is_causal=True,
    )
    expected = model.output(z)
    torch.testing.assert_close(model(src, tgt), expected, rtol=1e-5, atol=1e-5)


def test_file_transformer_has_torch_transformer_size():
    model = adl.build(*TRANSFORMER, src_vocab=10, tgt_vocab=10)
    ref = nn.Transformer(512, 8, 6, 6, 2048, norm_first=True)
    ours = sum(p.numel() for p in model.encoder.parameters()) + sum(
        p.numel() for p in model.decoder.parameters()
    )
    assert ours == sum(p.numel() for p in ref.parameters())


def test_lstm_and_conv_against_torch():
    torch.manual_seed(0)
    x = torch.randn(2, 6, D)
    rnn = build_network("rnn", "decoder").chain.layers[0]
    torch.testing.assert_close(rnn(x, Context("decoder")), rnn.rnn(x)[0])
    conv = build_network("cnn(k=3)", "encoder").chain.layers[0]
    ref = nn.Conv1d(D, D, 3, padding=1)
    ref.load_state_dict(conv.conv.state_dict())
    torch.testing.assert_close(
        conv(x, Context("encoder")), torch.relu(ref(x.transpose(1, 2))).transpose(1, 2)
    )
    causal = build_network("cnn(k=3)", "decoder").chain.layers[0]
    causal.conv.load_state_dict(conv.conv.state_dict())
    ref_causal = nn.functional.conv1d(
        nn.functional.pad(x.transpose(1, 2), (2, 0)), ref.weight, ref.bias
    )
    torch.testing.assert_close(
        causal(x, Context("decoder")), torch.relu(ref_causal).transpose(1, 2)
    )
