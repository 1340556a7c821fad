"""The three attention kinds of one pass: encoder self-attention (padding only, both directions), decoder
self-attention (causal) and cross-attention (decoder queries, encoder keys and values), with their masks checked."""

from __future__ import annotations

import numpy as np
import torch

from viz_model.lessons.common import Check, Claim, Fact, StepView, row_sums
from viz_model.masks import causal_mask
from viz_model.model import eval_mode
from viz_model.seq2seq import Seq2SeqTransformer

N_PAD = 2  # pads added to the source in the padding view (as a shorter sentence in a batch would get)


@torch.no_grad()
def three_attentions(model: Seq2SeqTransformer, src_ids, tgt_ids, pad: int = 0) -> dict:
    """One traced pass (source + `pad` pads, decoder input): for "encoder", "decoder" and "cross", every layer's
    weights (L, H, Tq, Tk) and where a query may attend (Tq, Tk), as numpy arrays."""
    src = torch.tensor([[*src_ids, *[model.config.pad_id] * pad]], device=model.device)  # (1, T_src)
    with eval_mode(model):
        tr = model(src, torch.tensor([list(tgt_ids)], device=model.device), trace=True).trace
    out = {}
    for kind in ("encoder", "decoder", "cross"):
        layers = getattr(tr, kind)
        probs = torch.stack([lt.probs[0] for lt in layers]).float().cpu()  # (L, H, Tq, Tk)
        mask = layers[0].mask
        allowed = (torch.ones(probs.shape[2:], dtype=torch.bool) if mask is None else
                   torch.isfinite(mask).expand(layers[0].probs.shape)[0, 0].cpu())  # (Tq, Tk)
        out[kind] = (probs.numpy(), allowed.numpy())
    return out


def three_panels(run: dict, layer: int, head: int, src_labels: list[str], tgt_labels: list[str],
                 fed: list[str]) -> tuple[list[tuple], int]:
    """(the figure's panels: encoder self, decoder self, cross of one head of three_attentions' `run`; the encoder
    layer shown: the decoder's layer, or the encoder's last when it has fewer layers)."""
    (ep, ea), (dp, da), (cp, ca) = run["encoder"], run["decoder"], run["cross"]
    enc_layer = min(layer, ep.shape[0] - 1)
    Ts, Tt = len(src_labels), len(tgt_labels)
    return [(f"encoder self: {Ts} × {Ts}, padding only (both directions)", ep[enc_layer, head], ea, src_labels,
             src_labels),
            (f"decoder self: {Tt} × {Tt}, causal", dp[layer, head], da, tgt_labels, fed),
            (f"cross: {Tt} × {Ts}, queries from the decoder, keys/values from the encoder", cp[layer, head], ca,
             tgt_labels, src_labels)], enc_layer


def three_titles(enc_layer: int, layer: int, head: int) -> list[str]:
    """Each of three_panels' charts' title: the layer it comes from and the head (the cross attention is the
    decoder layer's, reading the encoder's output)."""
    return [f"Encoder layer {enc_layer}, head {head}", f"Decoder layer {layer}, head {head}",
            f"Decoder layer {layer}, head {head}"]


def three_claims(run: dict, real: int, pad: int, steps: list[StepView], plain_cross=None) -> list[Claim]:
    """The masks hold in three_attentions' `run` of a source of `real` tokens plus `pad` pads: cross rows sum to 1
    over the real tokens, future and padded keys get exactly 0, the step-by-step rows equal the one pass, and
    (plain_cross: the same pass without pads) the pads change nothing."""
    (cp, ca), (dp, da) = run["cross"], run["decoder"]
    claims: list[Claim] = [row_sums(cp[..., :real], f"Every cross-attention row sums to 1 over the {real} real "
                                    "source tokens")]
    future = ~causal_mask(da.shape[0]).numpy()  # (T_tgt, T_tgt): key after the query
    zero = bool((dp[..., future] == 0).all()) and bool((cp[..., real:] == 0).all())
    masks_ok = bool((da == ~future).all()) and bool(ca[:, :real].all()) and not bool(ca[:, real:].any())
    claims.append(Fact(zero and masks_ok,
                       "Future target keys and the padded source keys get weight exactly 0.0" if pad else
                       "Future target keys get weight exactly 0.0 (causal); no source key is masked (there is no "
                       "padding)"))
    if steps:
        rows = np.stack([v.attention for v in steps], axis=2)  # (L, H, n, T_src) from the step-by-step decoding
        claims.append(Check(float(np.abs(rows - cp[:, :, : len(steps), :real]).max()), 1e-5,
                            f"The {len(steps)} rows decoded one word at a time (encoder once, caches) equal this one "
                            "pass over the whole output"))
    if pad:
        # 1e-5 like the other float32 checks: a padded pass sums over more (zero-weight) keys in another order, and
        # its rounding differs by up to ~1e-6 after two layers (6.6e-7 on two threads, above 1e-6 on one)
        claims.append(Check(float(np.abs(plain_cross - cp[..., :real]).max()), 1e-5,
                            f"Adding {pad} pads changes nothing the real tokens see"))
    return claims


# -- what the page says ------------------------------------------------------------------------------------------------
THREE_CAPTION = ("Grey × = masked (−∞ before the softmax, weight exactly 0). The encoder reads the whole source both "
                 "ways; the decoder reads only the words it has written; cross-attention lets every target position "
                 "read every real source word. Row labels: the decoder's input → the word that row chose (? = next).")
