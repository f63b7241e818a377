# SPDX-License-Identifier: MIT
"""PyTorch twins of pipezip's presets, layer for layer and parameter for
parameter in the same order, used by bench/ and tests/ref/ (never by tests)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """CIFAR-style ResNet-(6n+2), widths 16/32/64, projection shortcuts."""

    def __init__(self, n, in_ch=1, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for g, w in enumerate([16, 32, 64]):
            for i in range(n):
                blocks.append(BasicBlock(cin, w, 2 if (g > 0 and i == 0) else 1))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, n_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.blocks(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def resnet8(in_ch=1, n_classes=10):
    return ResNet(1, in_ch, n_classes)


def resnet20(in_ch=1, n_classes=10):
    return ResNet(3, in_ch, n_classes)


# ---------------------------------------------------------------------------
# GPT-2 style decoder, parameter for parameter the layout of pipezip's
# gpt presets (src/nn/presets.c): the same names, shapes and order.

class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.heads
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, hs).transpose(1, 2)
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, layers, dim, heads, context):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.h = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.h:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.t()  # the head tied to the token table


GPT_PRESETS = {"gpt-tiny": (4, 128, 4, 128), "gpt-small": (6, 256, 8, 256)}


def gpt(name, vocab=256):
    layers, dim, heads, context = GPT_PRESETS[name]
    return GPT(vocab, layers, dim, heads, context)
