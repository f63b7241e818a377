#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PyTorch model split over two processes that ship pipezip frames.

Rank 0 (the client) holds the first layers, rank 1 (the server) the rest and
the loss, as in split learning. Every step the client encodes its activation
with the forward codec and sends the frame over torch.distributed (gloo);
the server decodes it, runs its layers, encodes the activation's gradient
with the backward codec and sends that frame back; the client decodes it and
finishes backward. Frames travel as uint8 tensors after their length.
Both ends keep a codec object of each spec, so stateful codecs (ef, ef21,
aqsgd with sample ids) stay in sync as they would across a real link.

    PYTHONPATH=python /usr/bin/python3 examples/torch_split_gloo.py --fwd q4 --bwd q8

prints the test accuracy and the bytes that crossed against what float32
would have taken. Data: Fashion-MNIST from Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist), a slice of it by default.
"""
import argparse
import gzip
import json
import os
import socket
import struct
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import pipezip


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    nd = magic & 0xFF
    dims = struct.unpack(">" + "I" * nd, data[4:4 + 4 * nd])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def load(a):
    d = a.data_dir
    try:
        xtr, ytr = idx(f"{d}/train-images-idx3-ubyte.gz"), idx(f"{d}/train-labels-idx1-ubyte.gz")
        xte, yte = idx(f"{d}/t10k-images-idx3-ubyte.gz"), idx(f"{d}/t10k-labels-idx1-ubyte.gz")
    except OSError as e:
        sys.exit(f"torch_split_gloo: {e}: install Debian's dataset-fashion-mnist or give --data-dir")
    f = lambda x: torch.from_numpy(((x.astype(np.float32) / 255.0) - 0.2860) / 0.3530).unsqueeze(1)
    return (f(xtr[:a.train]), torch.from_numpy(ytr[:a.train].astype(np.int64)),
            f(xte[:a.test]), torch.from_numpy(yte[:a.test].astype(np.int64)))


def client_layers():
    return torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2))


def server_layers():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def send_frame(frame, dst):
    dist.send(torch.tensor([len(frame)], dtype=torch.int64), dst)
    dist.send(torch.frombuffer(bytearray(frame), dtype=torch.uint8), dst)


def recv_frame(src):
    n = torch.zeros(1, dtype=torch.int64)
    dist.recv(n, src)
    buf = torch.empty(int(n.item()), dtype=torch.uint8)
    dist.recv(buf, src)
    return buf.numpy()


def run(rank, a, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    xtr, ytr, xte, yte = load(a)
    fwd, bwd = pipezip.Codec(a.fwd), pipezip.Codec(a.bwd)  # this end's side of each link
    ids_needed = "aqsgd" in a.fwd or "per=sample" in a.fwd
    model = client_layers() if rank == 0 else server_layers()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    sent = elements = 0
    g = torch.Generator().manual_seed(a.seed)
    for epoch in range(a.epochs):
        if "aqsgd" in a.fwd:  # warm-up epochs send x uncompressed, filling both ends' buffers
            fwd.set_warmup(epoch < a.aqsgd_warmup)
        order = torch.randperm(len(xtr), generator=g)
        for i in range(0, len(xtr) - a.batch + 1, a.batch):
            b = order[i:i + a.batch]
            ids = b.numpy().astype(np.uint32) if ids_needed else None
            opt.zero_grad()
            if rank == 0:
                act = model(xtr[b])
                frame = fwd.encode(act.detach(), ids=ids)
                send_frame(frame, 1)
                grad = torch.from_numpy(bwd.decode(recv_frame(1)))
                act.backward(grad.reshape(act.shape))
                sent += len(frame)
                elements += act.numel()
            else:
                act = torch.from_numpy(fwd.decode(recv_frame(0))).requires_grad_()
                loss = torch.nn.functional.cross_entropy(model(act), ytr[b])
                loss.backward()
                frame = bwd.encode(act.grad, ids=ids)
                send_frame(frame, 0)
                sent += len(frame)
                elements += act.numel()
            opt.step()
    # evaluation through the same boundary, the forward codec's base (no state)
    correct = 0
    base = pipezip.Codec(pipezip.Codec(a.fwd).base_spec)
    with torch.no_grad():
        for i in range(0, len(xte), 500):
            if rank == 0:
                send_frame(base.encode(model(xte[i:i + 500])), 1)
            else:
                act = torch.from_numpy(base.decode(recv_frame(0)))
                correct += int((model(act).argmax(1) == yte[i:i + 500]).sum())
    totals = torch.tensor([sent, elements], dtype=torch.float64)
    stats = [torch.zeros(2, dtype=torch.float64) for _ in range(2)]
    dist.all_gather(stats, totals)
    if rank == 1:
        fwd_bytes, fwd_el = stats[0].tolist()
        bwd_bytes, bwd_el = stats[1].tolist()
        r = {"fwd": a.fwd, "bwd": a.bwd, "train": len(xtr), "epochs": a.epochs,
             "test_accuracy": correct / len(xte),
             "fwd_bytes": int(fwd_bytes), "bwd_bytes": int(bwd_bytes), "fp32_bytes": int(4 * (fwd_el + bwd_el)),
             "fwd_bits_per_element": 8 * fwd_bytes / fwd_el, "bwd_bits_per_element": 8 * bwd_bytes / bwd_el}
        r["compression"] = r["fp32_bytes"] / (r["fwd_bytes"] + r["bwd_bytes"])
        out.put(r)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fwd", default="q4", help="codec of the activations (client -> server)")
    ap.add_argument("--bwd", default="q8", help="codec of their gradients (server -> client)")
    ap.add_argument("--train", type=int, default=8192, help="training images (of 60000)")
    ap.add_argument("--test", type=int, default=2000, help="test images (of 10000)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--aqsgd-warmup", type=int, default=1, help="epochs an aqsgd(...) --fwd sends uncompressed")
    ap.add_argument("--compare-fp32", action="store_true", help="also train with fwd=none bwd=none and print both")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON line")
    a = ap.parse_args()
    for spec in (a.fwd, a.bwd):
        pipezip.Codec(spec)  # a bad spec fails here, with the library's message
    runs = [(a.fwd, a.bwd)] + ([("none", "none")] if a.compare_fp32 else [])
    results = []
    for fwd, bwd in runs:
        a.fwd, a.bwd = fwd, bwd
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out = mp.get_context("spawn").SimpleQueue()
        mp.start_processes(run, args=(a, port, out), nprocs=2, join=True, start_method="spawn")
        results.append(out.get())
    for r in results:
        if a.json:
            print(json.dumps(r))
            continue
        print(f"split over 2 processes (gloo), fwd={r['fwd']} bwd={r['bwd']}, {r['train']} images x {r['epochs']} "
              f"epoch(s): test accuracy {100 * r['test_accuracy']:.2f}%")
        print(f"  crossed: {r['fwd_bytes']:,} B forward ({r['fwd_bits_per_element']:.2f} bits/element), "
              f"{r['bwd_bytes']:,} B backward ({r['bwd_bits_per_element']:.2f}); float32 would be "
              f"{r['fp32_bytes']:,} B: {r['compression']:.1f}x less")


if __name__ == "__main__":
    main()
