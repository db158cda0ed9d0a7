"""State-space and linear-attention problems: Mamba's causal depthwise conv1d, the selective scan,
Mamba-2's chunked SSD (cumsum of the decays), gated linear attention, the gated delta rule,
Hyena's FFT long convolution; and backward through some of them."""

from __future__ import annotations

from solbench.dataset.synthetic.core import BATCH, SEQ, SHORT, VAR, Spec, autograd_backward, model_spec, out, t
from solbench.dataset.synthetic.models import GLA_1_3B, HYENA, MAMBA2_2_7B, MAMBA2_780M, MAMBA_2_8B, QWEN3_NEXT, Model

SCAN_GRID = {"batch_size": BATCH[:5], "seq_len": SEQ[:5]}
SCAN_SMALL = {"batch_size": 1, "seq_len": 64}

SSD_CHUNKED = '''
def ssd_chunked(x, a, b, c, chunk):
    """y[t] = sum over s <= t of (c[t] . b[s]) * exp(a[s+1] + ... + a[t]) * x[s], chunk by chunk.

    x [batch, seq, heads, head_dim], a [batch, seq, heads] (log decays), b and c [batch, seq, d_state].
    """
    batch, seq_len, heads, head_dim = x.shape
    n, num_chunks = b.shape[-1], seq_len // chunk
    x = x.reshape(batch, num_chunks, chunk, heads, head_dim)
    b = b.reshape(batch, num_chunks, chunk, n)
    c = c.reshape(batch, num_chunks, chunk, n)
    a_cum = torch.cumsum(a.reshape(batch, num_chunks, chunk, heads).permute(0, 3, 1, 2), dim=-1)
    causal = torch.tril(torch.ones(chunk, chunk, dtype=torch.bool, device=x.device))
    decay = torch.exp((a_cum[..., :, None] - a_cum[..., None, :]).masked_fill(~causal, float("-inf")))
    y = torch.einsum("bctn,bcsn,bhcts,bcshp->bcthp", c, b, decay, x)
    chunk_states = torch.einsum("bcsn,bhcs,bcshp->bchpn", b, torch.exp(a_cum[..., -1:] - a_cum), x)
    state = torch.zeros_like(chunk_states[:, 0])
    entering = []
    for i in range(num_chunks):
        entering.append(state)
        state = state * torch.exp(a_cum[:, :, i, -1])[..., None, None] + chunk_states[:, i]
    y = y + torch.einsum("bctn,bchpn,bhct->bcthp", c, torch.stack(entering, dim=1), torch.exp(a_cum))
    return y.reshape(batch, seq_len, heads, head_dim), state
'''

SSD_DT = """
def ssd_dt(x, dt, A_log, B, C, D, dt_bias, chunk):
    dt = F.softplus(dt.to(torch.float32) + dt_bias)
    a = -torch.exp(A_log)[None, None, :] * dt
    x32 = x.to(torch.float32)
    y, state = ssd_chunked(x32 * dt[..., None], a, B.to(torch.float32), C.to(torch.float32), chunk)
    return y + D[None, None, :, None] * x32, state
"""


def _ssd_axes(model: Model, chunk: int) -> dict:
    return {"batch_size": VAR, "seq_len": VAR, "num_heads": model.heads, "head_dim": model.head_dim,
            "d_state": model["d_state"], "chunk_size": chunk}


X_SHAPE = ["batch_size", "seq_len", "num_heads", "head_dim"]
BC_SHAPE = ["batch_size", "seq_len", "d_state"]
STATE_SHAPE = ["batch_size", "num_heads", "head_dim", "d_state"]


def ssd_scan(model: Model, chunk: int, parametrised: bool, dtype: str = "bfloat16") -> Spec:
    """parametrised: decays from dt (softplus with a bias) and A_log, plus the D skip; else the log decays A directly."""
    if parametrised:
        inputs = [t("x", X_SHAPE, dtype), t("dt", ["batch_size", "seq_len", "num_heads"], dtype),
                  t("A_log", ["num_heads"], "float32"), t("B", BC_SHAPE, dtype), t("C", BC_SHAPE, dtype),
                  t("D", ["num_heads"], "float32"), t("dt_bias", ["num_heads"], "float32")]
        call, parts = f"ssd_dt(x, dt, A_log, B, C, D, dt_bias, {chunk})", [SSD_CHUNKED, SSD_DT]
    else:
        inputs = [t("X", X_SHAPE, dtype), t("A", ["batch_size", "seq_len", "num_heads"], "float32", "per-step log decay (dt * A)"),
                  t("B", BC_SHAPE, dtype), t("C", BC_SHAPE, dtype)]
        call, parts = f"ssd_chunked(X.to(torch.float32), A, B.to(torch.float32), C.to(torch.float32), {chunk})", [SSD_CHUNKED]
    run = f"def run({', '.join(x.name for x in inputs)}):\n    y, state = {call}\n    return y.to({inputs[0].name}.dtype), state\n"
    return model_spec(
        model, f"ssd_chunk_scan{'_dt' if parametrised else ''}_{SHORT[dtype]}_{model.key}", "ssm_scan",
        f"Mamba-2 state-space duality scan of {model.key} in chunks of {chunk}: intra-chunk causal products with decays from "
        "the cumsum of the log decays, chunk states carried across chunks"
        + ("; decays from softplus(dt + dt_bias) and -exp(A_log), D skip" if parametrised else "") + "; returns y and the final state.",
        _ssd_axes(model, chunk), inputs, [out("y", X_SHAPE, dtype), out("final_state", STATE_SHAPE, "float32")],
        "import torch\nimport torch.nn.functional as F\n\n\n" + run, *parts,
        grid={"batch_size": BATCH[:5], "seq_len": SEQ}, small={"batch_size": 1, "seq_len": 128},
        constraints=["seq_len % chunk_size == 0"], valid=lambda axes: axes["seq_len"] % chunk == 0,
    )


def selective_scan(model: Model, dtype: str = "bfloat16") -> Spec:
    seq = ["batch_size", "d_inner", "seq_len"]
    bc = ["batch_size", "d_state", "seq_len"]
    return model_spec(
        model, f"selective_scan_{SHORT[dtype]}_{model.key}", "ssm_scan",
        f"Mamba selective scan of {model.key} (d_inner {model.inter}, d_state {model['d_state']}), step by step: discretised "
        "with softplus(dt + dt_bias) and A = -exp(A_log), plus the D skip.",
        {"batch_size": VAR, "d_inner": model.inter, "d_state": model["d_state"], "seq_len": VAR},
        [t("u", seq, dtype), t("dt", seq, dtype), t("A_log", ["d_inner", "d_state"], "float32"), t("B", bc, dtype), t("C", bc, dtype),
         t("D", ["d_inner"], "float32"), t("dt_bias", ["d_inner"], "float32")],
        [out("y", seq, dtype)],
        """
        import torch
        import torch.nn.functional as F


        def run(u, dt, A_log, B, C, D, dt_bias):
            A = -torch.exp(A_log)
            delta = F.softplus(dt.to(torch.float32) + dt_bias[:, None])
            u32 = u.to(torch.float32)
            state = torch.zeros(u.shape[0], u.shape[1], A.shape[1], dtype=torch.float32, device=u.device)
            ys = []
            for i in range(u.shape[-1]):
                d = delta[:, :, i, None]
                state = torch.exp(d * A) * state + d * B[:, None, :, i].to(torch.float32) * u32[:, :, i, None]
                ys.append((state * C[:, None, :, i].to(torch.float32)).sum(-1))
            return (torch.stack(ys, dim=-1) + u32 * D[:, None]).to(u.dtype)
        """,
        grid={"batch_size": BATCH[:5], "seq_len": SEQ[:5]}, small={"batch_size": 1, "seq_len": 32},
    )


def causal_conv1d(model: Model) -> Spec:
    seq = ["batch_size", "d_inner", "seq_len"]
    return model_spec(
        model, f"causal_conv1d_silu_fp32_{model.key}", "conv1d",
        f"Mamba's causal depthwise conv1d (kernel {model['d_conv']}, one filter per channel) followed by SiLU, {model.key}.",
        {"batch_size": VAR, "d_inner": model.inter, "seq_len": VAR, "d_conv": model["d_conv"]},
        [t("x", seq, "float32"), t("conv_weight", ["d_inner", 1, "d_conv"], "float32"), t("conv_bias", ["d_inner"], "float32")],
        [out("out", seq, "float32")],
        """
        import torch
        import torch.nn.functional as F


        def run(x, conv_weight, conv_bias):
            y = F.conv1d(x, conv_weight, conv_bias, padding=conv_weight.shape[-1] - 1, groups=x.shape[1])
            return F.silu(y[..., : x.shape[-1]])
        """,
        grid={"batch_size": BATCH[:5], "seq_len": SEQ}, small=SCAN_SMALL,
    )


def gated_linear_attention(model: Model) -> Spec:
    qk = ["batch_size", "num_heads", "seq_len", "head_k_dim"]
    vo = ["batch_size", "num_heads", "seq_len", "head_v_dim"]
    return model_spec(
        model, f"gated_linear_attention_bf16_{model.key}", "linear_attention",
        f"Gated linear attention of {model.key} as its recurrence: a per-key-dimension decay from the gate g, state update "
        "with k v^T, read-out with the scaled q.",
        {"batch_size": VAR, "num_heads": model.heads, "seq_len": VAR, "head_k_dim": model.head_dim // 2, "head_v_dim": model.head_dim},
        [t("q", qk, "bfloat16"), t("k", qk, "bfloat16"), t("v", vo, "bfloat16"),
         t("g", qk, "bfloat16", "gate logits; log decay = logsigmoid(g) / 16")],
        [out("o", vo, "bfloat16"), out("final_state", ["batch_size", "num_heads", "head_k_dim", "head_v_dim"], "float32")],
        """
        import torch
        import torch.nn.functional as F


        def run(q, k, v, g):
            batch, heads, seq_len, dk = q.shape
            decay = torch.exp(F.logsigmoid(g.to(torch.float32)) / 16.0)
            state = torch.zeros(batch, heads, dk, v.shape[-1], dtype=torch.float32, device=q.device)
            outs = []
            for i in range(seq_len):
                kv = k[:, :, i, :, None].to(torch.float32) * v[:, :, i, None, :].to(torch.float32)
                state = state * decay[:, :, i, :, None] + kv
                outs.append(torch.einsum("bhk,bhkv->bhv", q[:, :, i].to(torch.float32) * dk ** -0.5, state))
            return torch.stack(outs, dim=2).to(q.dtype), state
        """,
        grid=SCAN_GRID, small=SCAN_SMALL,
    )


def gated_delta_rule(model: Model, dtype: str = "bfloat16") -> Spec:
    qk = ["batch_size", "num_heads", "seq_len", "head_dim"]
    gate = ["batch_size", "num_heads", "seq_len"]
    return model_spec(
        model, f"gated_delta_rule_{SHORT[dtype]}_{model.key}", "linear_attention",
        f"Gated delta rule of {model.key}'s linear-attention layers: decay the state by exp(logsigmoid(g)), "
        "correct it towards v along the normalised k with strength sigmoid(beta), read out with q.",
        {"batch_size": VAR, "num_heads": model.heads, "seq_len": VAR, "head_dim": model.head_dim},
        [t("q", qk, dtype), t("k", qk, dtype), t("v", qk, dtype), t("g", gate, "float32"), t("beta", gate, dtype)],
        [out("o", qk, dtype), out("final_state", ["batch_size", "num_heads", "head_dim", "head_dim"], "float32")],
        """
            import torch
            import torch.nn.functional as F


            def run(q, k, v, g, beta):
                q = F.normalize(q.to(torch.float32), dim=-1) * q.shape[-1] ** -0.5
                k = F.normalize(k.to(torch.float32), dim=-1)
                v32 = v.to(torch.float32)
                decay = torch.exp(F.logsigmoid(g))
                strength = torch.sigmoid(beta.to(torch.float32))
                batch, heads, seq_len, dim = q.shape
                state = torch.zeros(batch, heads, dim, dim, dtype=torch.float32, device=q.device)
                outs = []
                for i in range(seq_len):
                    state = state * decay[:, :, i, None, None]
                    k_i = k[:, :, i]
                    error = (v32[:, :, i] - torch.einsum("bhk,bhkv->bhv", k_i, state)) * strength[:, :, i, None]
                    state = state + k_i[..., :, None] * error[..., None, :]
                    outs.append(torch.einsum("bhk,bhkv->bhv", q[:, :, i], state))
                return torch.stack(outs, dim=2).to(v.dtype), state
        """,
        grid=SCAN_GRID,
        small=SCAN_SMALL,
    )


def fft_long_conv(model: Model) -> Spec:
    seq = ["batch_size", "hidden_size", "seq_len"]
    return model_spec(
        model, f"fft_long_conv_fp32_{model.key}", "fft_conv",
        f"Hyena long convolution of {model.key}: a causal convolution with a filter as long as the sequence, computed with "
        "torch.fft.rfft/irfft on twice the length, plus a per-channel skip.",
        {"batch_size": VAR, "hidden_size": model.hidden, "seq_len": VAR},
        [t("u", seq, "float32"), t("filter", ["hidden_size", "seq_len"], "float32"), t("bias", ["hidden_size"], "float32")],
        [out("y", seq, "float32")],
        """
        import torch


        def run(u, filter, bias):
            seq_len = u.shape[-1]
            n = 2 * seq_len
            y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(filter, n=n), n=n)[..., :seq_len]
            return y + u * bias[:, None]
        """,
        grid={"batch_size": BATCH[:4], "seq_len": SEQ + [16384]}, small=SCAN_SMALL,
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L1": [causal_conv1d(MAMBA_2_8B)],
        "L2": [
            ssd_scan(MAMBA2_2_7B, 64, parametrised=False, dtype="float32"),
            ssd_scan(MAMBA2_780M, 64, parametrised=True),
            selective_scan(MAMBA_2_8B),
            gated_linear_attention(GLA_1_3B),
            gated_delta_rule(QWEN3_NEXT, "float32"),
            fft_long_conv(HYENA),
            autograd_backward(ssd_scan(MAMBA2_780M, 64, parametrised=True), ["x", "dt", "B", "C"], {"y": "grad_y"}),
            autograd_backward(selective_scan(MAMBA_2_8B, dtype="float32"), ["u", "dt", "A_log"], {"y": "grad_y"}),
            autograd_backward(gated_linear_attention(GLA_1_3B), ["q", "k", "v", "g"], {"o": "grad_o"}),
            autograd_backward(causal_conv1d(MAMBA_2_8B), ["x", "conv_weight", "conv_bias"], {"out": "grad_out"}),
            autograd_backward(fft_long_conv(HYENA), ["u", "filter"], {"y": "grad_y"}),
        ],
    }
