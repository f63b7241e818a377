#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate the reference tensors the C tests compare against, with PyTorch
(Debian's python3-torch: run with /usr/bin/python3 tests/ref/gen_ref.py).

Writes tests/ref/layers.bin (every layer's forward output and gradients on
small random inputs), tests/ref/resnet8_step.bin (two SGD steps of a whole
resnet8 from deterministic "formula" weights the C test recreates itself)
and tests/ref/gpt.bin (the transformer layers, and two AdamW steps of a
small GPT whose initial parameters the file carries).

File format (little-endian): the 8 bytes b"PZREF1\\0\\0", then records of
  u32 name_len, name (utf-8), u32 ndim, u32 dims[ndim], f32 data[prod(dims)].
"""
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import torch_models  # noqa: E402

torch.manual_seed(1234)
torch.set_num_threads(1)


class RefWriter:
    def __init__(self, path):
        self.f = open(path, "wb")
        self.f.write(b"PZREF1\0\0")

    def put(self, name, t):
        a = np.ascontiguousarray(t.detach().cpu().numpy() if torch.is_tensor(t) else t, dtype="<f4")
        nb = name.encode()
        self.f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<I", a.ndim))
        self.f.write(struct.pack("<%dI" % a.ndim, *a.shape))
        self.f.write(a.tobytes())

    def close(self):
        self.f.close()


def layers(path):
    w = RefWriter(path)

    def conv_case(name, B, C, H, W, OC, K, stride, pad, bias):
        x = torch.randn(B, C, H, W, requires_grad=True)
        wt = (torch.randn(OC, C, K, K) * 0.3).requires_grad_()
        b = (torch.randn(OC) * 0.1).requires_grad_() if bias else None
        y = F.conv2d(x, wt, b, stride, pad)
        dy = torch.randn_like(y)
        y.backward(dy)
        for k, v in [("x", x), ("w", wt), ("y", y), ("dy", dy), ("dx", x.grad), ("dw", wt.grad)]:
            w.put(f"{name}.{k}", v)
        if bias:
            w.put(f"{name}.b", b)
            w.put(f"{name}.db", b.grad)

    conv_case("conv_s2p1", 2, 3, 7, 7, 4, 3, 2, 1, True)
    conv_case("conv_s1p1", 2, 2, 5, 6, 3, 3, 1, 1, True)
    conv_case("conv_1x1", 2, 5, 4, 4, 3, 1, 1, 0, False)
    conv_case("conv_1x1s2", 3, 4, 7, 7, 6, 1, 2, 0, False)
    conv_case("conv_5x5p2", 2, 1, 9, 9, 2, 5, 1, 2, True)

    # batch norm, train mode then eval mode with the updated running stats
    x = (torch.randn(4, 3, 5, 5) * 2 + 0.5).requires_grad_()
    g = (1 + 0.2 * torch.randn(3)).requires_grad_()
    b = (0.1 * torch.randn(3)).requires_grad_()
    rm, rv = 0.1 * torch.randn(3), 1 + 0.1 * torch.rand(3)
    rm0, rv0 = rm.clone(), rv.clone()
    y = F.batch_norm(x, rm, rv, g, b, training=True, momentum=0.1, eps=1e-5)
    dy = torch.randn_like(y)
    y.backward(dy)
    ye = F.batch_norm(x, rm, rv, g, b, training=False, eps=1e-5)
    for k, v in [("x", x), ("gamma", g), ("beta", b), ("rm0", rm0), ("rv0", rv0), ("y", y), ("dy", dy),
                 ("dx", x.grad), ("dgamma", g.grad), ("dbeta", b.grad), ("rm", rm), ("rv", rv), ("y_eval", ye)]:
        w.put(f"bn.{k}", v)

    def pool_case(name, fn, B, C, H, W, K, s, p):
        x = torch.randn(B, C, H, W, requires_grad=True)
        y = fn(x, K, s, p)
        dy = torch.randn_like(y)
        y.backward(dy)
        for k, v in [("x", x), ("y", y), ("dy", dy), ("dx", x.grad)]:
            w.put(f"{name}.{k}", v)

    pool_case("maxpool_2s2", F.max_pool2d, 2, 3, 6, 6, 2, 2, 0)
    pool_case("maxpool_3s2p1", F.max_pool2d, 2, 2, 7, 7, 3, 2, 1)
    pool_case("avgpool_2s2", F.avg_pool2d, 2, 3, 6, 6, 2, 2, 0)
    pool_case("avgpool_3s1p1", F.avg_pool2d, 2, 2, 5, 5, 3, 1, 1)

    x = torch.randn(3, 4, 5, 5, requires_grad=True)
    y = F.adaptive_avg_pool2d(x, 1)
    dy = torch.randn_like(y)
    y.backward(dy)
    for k, v in [("x", x), ("y", y), ("dy", dy), ("dx", x.grad)]:
        w.put(f"gap.{k}", v)

    x = torch.randn(5, 7, requires_grad=True)
    wt = (0.3 * torch.randn(4, 7)).requires_grad_()
    b = (0.1 * torch.randn(4)).requires_grad_()
    y = F.linear(x, wt, b)
    dy = torch.randn_like(y)
    y.backward(dy)
    for k, v in [("x", x), ("w", wt), ("b", b), ("y", y), ("dy", dy), ("dx", x.grad), ("dw", wt.grad), ("db", b.grad)]:
        w.put(f"linear.{k}", v)

    z = (3 * torch.randn(6, 10)).requires_grad_()
    labels = torch.tensor([0, 3, 9, 3, 7, 1])
    loss = F.cross_entropy(z, labels)
    loss.backward()
    for k, v in [("logits", z), ("labels", labels.float()), ("loss", loss.reshape(1)), ("dlogits", z.grad)]:
        w.put(f"xent.{k}", v)

    # optimizers: 4 steps on a 7-vector with a fixed sequence of gradients
    p0 = torch.randn(7)
    grads = torch.randn(4, 7)
    w.put("optim.p0", p0)
    w.put("optim.grads", grads)
    for name, make in [("sgd", lambda q: torch.optim.SGD([q], lr=0.1, momentum=0.9, weight_decay=0.01)),
                       ("sgd_nesterov", lambda q: torch.optim.SGD([q], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
                       ("sgd_plain", lambda q: torch.optim.SGD([q], lr=0.1)),
                       ("adamw", lambda q: torch.optim.AdamW([q], lr=0.01, weight_decay=0.1))]:
        q = p0.clone().requires_grad_()
        opt = make(q)
        traj = []
        for g in grads:
            q.grad = g.clone()
            opt.step()
            traj.append(q.detach().clone())
        w.put(f"optim.{name}", torch.stack(traj))
    # NAdamW: torch.optim.NAdam (2.x) with decoupled_weight_decay=True, beta1
    # 0.99 as arXiv 2505.01099 runs it, written out step by step as torch
    # 2.x's _single_tensor_nadam does it (torch 1.13's NAdam, Debian 12's,
    # takes mu_product * mu * mu_next for the next product: fixed in 2.0;
    # it has no decoupled decay)
    q, m, v, mu_product = p0.clone(), torch.zeros(7), torch.zeros(7), torch.ones(())
    lr, b1, b2, wd, psi, eps = 0.01, 0.99, 0.999, 0.1, 0.004, 1e-8
    traj = []
    for t, g in enumerate(grads, 1):
        q.mul_(1 - lr * wd)
        mu = b1 * (1.0 - 0.5 * (0.96 ** (t * psi)))
        mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * psi)))
        mu_product *= mu
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = v.div(1 - b2 ** t).sqrt().add_(eps)
        q.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product.item()))
        q.addcdiv_(m, denom, value=-lr * mu_next / (1.0 - mu_product.item() * mu_next))
        traj.append(q.clone())
    w.put("optim.nadamw", torch.stack(traj))
    # OneCycleLR (cosine), the lr at each of 50 steps
    q = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([q], lr=0.1)
    sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=50, pct_start=0.3,
                                              cycle_momentum=False)
    lrs = []
    for _ in range(50):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sch.step()
    w.put("sched.onecycle", torch.tensor(lrs))

    x = torch.randn(2, 3, 4, 4, requires_grad=True)
    y = F.relu(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    for k, v in [("x", x), ("y", y), ("dy", dy), ("dx", x.grad)]:
        w.put(f"relu.{k}", v)
    w.close()


# ---------------------------------------------------------------------------
# formula values: integer hash -> uniform in [-1, 1) -> scaled, computed so
# that C reproduces every float bit for bit (tests/nn/test_resnet8_ref.c)

def formula(n, t):
    i = np.arange(n, dtype=np.uint64)
    h = (i * np.uint64(2654435761) + np.uint64((t + 1) * 97531)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(2246822519)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(13)
    u = (h >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    return (np.float32(2) * u - np.float32(1)).astype(np.float32)


def resnet8_step(path, B=8):
    model = torch_models.resnet8(1, 10)
    t = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            v = formula(p.numel(), t)
            if p.dim() > 1:
                fan_in = int(np.prod(p.shape[1:]))
                v = v * np.float32(np.sqrt(6.0 / fan_in))
            elif name.endswith("weight"):  # bn gamma
                v = np.float32(1) + v * np.float32(0.125)
            else:  # bias / bn beta
                v = v * np.float32(0.125)
            p.copy_(torch.from_numpy(v.reshape(p.shape)))
            t += 1
    x = torch.from_numpy(formula(B * 28 * 28, 1000).reshape(B, 1, 28, 28))
    y = torch.tensor([(i * 7 + 3) % 10 for i in range(B)])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    w = RefWriter(path)
    for step in range(2):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        w.put(f"step{step}.loss", loss.reshape(1))
        w.put(f"step{step}.logits", logits)
        if step == 0:
            w.put("step0.grads", torch.cat([p.grad.flatten() for p in model.parameters()]))
        opt.step()
    w.put("params_after", torch.cat([p.detach().flatten() for p in model.parameters()]))
    w.put("buffers_after", torch.cat([b.flatten() for n, b in model.named_buffers() if "num_batches" not in n]))
    model.eval()
    with torch.no_grad():
        w.put("eval_logits", model(x))
    w.close()


def gpt(path):
    """Transformer layers on small random inputs, then a whole GPT (2 blocks,
    width 16, 2 heads, context 8, vocabulary 11) over B=3 sequences of T=7
    tokens: logits, loss, every gradient and the parameters after each of
    two AdamW steps (lr 1e-2, betas (0.9, 0.95), eps 1e-8, weight decay 0.1
    on the dense layers' matrices only, not on the embeddings, LayerNorms
    or biases: the gpt presets' policy)."""
    torch.manual_seed(4321)
    w = RefWriter(path)

    # LayerNorm over the last dimension of (B, T, C)
    x = torch.randn(2, 5, 12, requires_grad=True)
    g = (1 + 0.2 * torch.randn(12)).requires_grad_()
    b = (0.1 * torch.randn(12)).requires_grad_()
    y = F.layer_norm(x, (12,), g, b, 1e-5)
    dy = torch.randn_like(y)
    y.backward(dy)
    for k, v in [("x", x), ("w", g), ("b", b), ("y", y), ("dy", dy), ("dx", x.grad), ("dw", g.grad), ("db", b.grad)]:
        w.put(f"layernorm.{k}", v)

    # GELU, tanh form, over a wide range
    x = (3 * torch.randn(4, 50)).requires_grad_()
    y = F.gelu(x, approximate="tanh")
    dy = torch.randn_like(y)
    y.backward(dy)
    for k, v in [("x", x), ("y", y), ("dy", dy), ("dx", x.grad)]:
        w.put(f"gelu.{k}", v)

    # causal attention core: qkv (B, T, 3C) -> (B, T, C), 2 heads
    B, T, C, NH = 2, 6, 8, 2
    qkv = torch.randn(B, T, 3 * C, requires_grad=True)
    q, k, v = qkv.split(C, dim=2)
    hs = C // NH
    q = q.view(B, T, NH, hs).transpose(1, 2)
    k = k.view(B, T, NH, hs).transpose(1, 2)
    v = v.view(B, T, NH, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / (hs ** 0.5)
    att = att.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
    dy = torch.randn_like(y)
    y.backward(dy)
    for kk, vv in [("qkv", qkv), ("y", y), ("dy", dy), ("dqkv", qkv.grad)]:
        w.put(f"attention.{kk}", vv)

    # token + position embedding, a repeated token included
    V, Tc, C = 7, 6, 5
    wte = torch.randn(V, C, requires_grad=True)
    wpe = torch.randn(Tc, C, requires_grad=True)
    tok = torch.tensor([[1, 3, 3, 0, 6], [6, 2, 1, 1, 5]])
    y = wte[tok] + wpe[:5]
    dy = torch.randn_like(y)
    y.backward(dy)
    for kk, vv in [("tok", tok.float()), ("wte", wte), ("wpe", wpe), ("y", y), ("dy", dy), ("dwte", wte.grad),
                   ("dwpe", wpe.grad)]:
        w.put(f"embedding.{kk}", vv)

    # the whole model
    model = torch_models.GPT(11, 2, 16, 2, 8)
    with torch.no_grad():  # GPT-2's initialisation, any values would do
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.normal_(0, 0.02 if "c_proj" not in name else 0.01)
            elif "ln" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0, 0.02)
    params = list(model.parameters())
    w.put("gpt.params", torch.cat([p.detach().flatten() for p in params]))
    idx = torch.randint(0, 11, (3, 8))
    x, tgt = idx[:, :7], idx[:, 1:]
    w.put("gpt.x", x.float())
    w.put("gpt.y", tgt.float())
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and not n.startswith(("wte", "wpe"))]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and not n.startswith(("wte", "wpe")))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    for step in range(2):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, 11), tgt.reshape(-1))
        loss.backward()
        w.put(f"gpt.step{step}.loss", loss.reshape(1))
        w.put(f"gpt.step{step}.logits", logits)
        w.put(f"gpt.step{step}.grads", torch.cat([p.grad.flatten() for p in params]))
        opt.step()
        w.put(f"gpt.step{step}.params", torch.cat([p.detach().flatten() for p in params]))
    w.close()


if __name__ == "__main__":
    layers(os.path.join(HERE, "layers.bin"))
    resnet8_step(os.path.join(HERE, "resnet8_step.bin"))
    gpt(os.path.join(HERE, "gpt.bin"))
    print("wrote layers.bin, resnet8_step.bin and gpt.bin in", HERE)
