"""attn.lessons.trained.seq2seq: the encoder and the decoder equal their layers written out step by step.

tests/attn/test_decoding.py trains the model and compares the decoder with itself (writing one digit
at a time against the training pass); here each residual connection is checked against a
reference computed from the model's own sublayers, so a dropped ``x +`` cannot pass.
"""
import torch

from attn.lessons.trained.seq2seq import BOS, Seq2Seq, make_pairs


def model_and_inputs(length=6, batch=3, seed=0):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Seq2Seq(length).double().eval()  # untrained: every sublayer's output is far from 0
    source, target = make_pairs("reverse", batch, length, generator=torch.Generator().manual_seed(seed))
    decoder_input = torch.cat([torch.full_like(target[:, :1], BOS), target[:, :-1]], dim=1)  # (B, L)
    return model, source, decoder_input


def test_encoder_is_embedding_plus_positions_then_a_residual_feed_forward():
    model, source, _ = model_and_inputs()
    with torch.no_grad():
        e = model.embed(source) + model.positions[: source.shape[1]]  # (B, S, E)
        want = e + model.encoder_ffn(e)
        got = model.encode(source)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)


def test_decoder_layer_is_self_attention_cross_attention_and_feed_forward_each_with_its_residual():
    model, source, decoder_input = model_and_inputs()
    L = decoder_input.shape[1]
    with torch.no_grad():
        memory = model.encode(source)  # (B, S, E)
        x = model.embed(decoder_input) + model.positions[:L]  # (B, L, E)
        a, _ = model.self_attn(x, causal=True)  # (B, L, E): causal self-attention
        x = x + a  # its residual
        c, want_weights = model.cross_attn(x, memory, memory)  # queries: decoder; keys, values: encoder
        x = x + c  # its residual
        want = model.out(x + model.decoder_ffn(x))  # (B, L, 10): the feed-forward and its residual
        got, weights = model.decode(memory, decoder_input)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, want_weights, atol=1e-12, rtol=0)
    # both attention outputs are far from 0, so dropping either residual shows in the logits
    assert a.abs().max() > 0.01 and c.abs().max() > 0.01
