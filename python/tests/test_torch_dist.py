# SPDX-License-Identifier: MIT
"""Frames over torch.distributed (gloo, processes spawned here): send/recv
carry byte for byte the frame the C library encodes for the same tensor
and spec, each end keeping its own codec state (EF21 over several frames
equals a local sender/receiver pair); a receiver of another spec refuses,
naming both. A two-stage pipeline.Stage (GPipe and 1F1B, two
micro-batches) trains to exactly the weights of the same model run in one
process through Boundary objects of the same codecs, and resumes from a
checkpoint of its state_dict() exactly."""
import os
import tempfile
import unittest

import numpy as np

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:  # torch is optional
    torch = None

import pipezip


def _init(rank, world, path):
    dist.init_process_group("gloo", init_method="file://" + path, rank=rank, world_size=world)


def _frames_worker(rank, path, out):
    import pipezip.torch as pzt
    _init(rank, 2, path + ".rdv")
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(4, 16, 32, generator=g) for _ in range(4)]
    if rank == 0:
        tx = pipezip.Codec("q4:per=token")
        ef = pipezip.Codec("ef21(q4)")
        for x in xs:
            pzt.send(x, 1, tx)
            pzt.send(x, 1, ef)
        pzt.send(xs[0], 1, pipezip.Codec("ef21(q8)"))
    else:
        got, errs = [], []
        rx = pipezip.Codec("q4:per=token")
        ef = pipezip.Codec("ef21(q4)")
        for _ in xs:
            got.append(pzt.recv_frame(0))
            y, n = pzt.recv(0, ef)
            got.append(y.numpy().tobytes())
        try:
            pzt.recv(0, pipezip.Codec("ef21(q4)"))
        except pipezip.Error as e:
            errs.append((e.frame_error, str(e)))
        torch.save({"got": got, "errs": errs, "rx_ok": rx.decode(got[0]).shape}, out)
    dist.barrier()
    dist.destroy_process_group()


def _ddp_net():
    torch.manual_seed(5)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def _ddp_batches(rank, steps):
    g = torch.Generator().manual_seed(100 + rank)
    w = torch.Generator().manual_seed(7)
    true = torch.randn(12, 4, generator=w)
    xs = [torch.randn(16, 12, generator=g) for _ in range(steps)]
    return [(x, x @ true) for x in xs]


def _ddp_run(spec, rank, steps, comp=None, model=None, opt=None, taps=None):
    """steps of DDP (plain, or through pipezip's hook with spec): the losses"""
    from torch.nn.parallel import DistributedDataParallel as DDP
    import pipezip.torch as pzt
    net = model if model is not None else _ddp_net()
    ddp = DDP(net)
    if spec is not None:
        comp = comp if comp is not None else pzt.DDPCompression(spec)
        if taps is not None:
            comp.tap = lambda i, t, f: taps.append((i, t, f))
        ddp.register_comm_hook(comp, pzt.ddp_hook)
    opt = opt if opt is not None else torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for x, y in _ddp_batches(rank, steps)[-steps:]:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return net, comp, opt, losses


def _ddp_worker(rank, path, out):
    import copy
    import pipezip.torch as pzt
    _init(rank, 2, path + ".rdv")
    r = {}
    plain, _, _, r["plain"] = _ddp_run(None, rank, 30)
    none, _, _, r["none"] = _ddp_run("none", rank, 30)
    r["none_equal"] = all(torch.equal(a, b) for a, b in zip(plain.parameters(), none.parameters()))
    taps = []
    _, comp, _, r["q8"] = _ddp_run("q8", rank, 30, taps=taps)
    r["q8_stats"] = comp.stats()
    # every frame is the codec's frame of the bucket it was given (one bucket: one sender, in order)
    ref = pipezip.Codec("q8", seed=0)
    r["frames_match"] = len(taps) == 30 and all(ref.encode(t.numpy()) == f for _, t, f in taps)
    _, comp, _, r["ef"] = _ddp_run("ef(q2)", rank, 30)
    r["ef_stats"] = comp.stats()
    _, comp, _, r["lowrank"] = _ddp_run("lowrank:2", rank, 30)
    # resume: 10 steps, saved, 10 more; against a copy loaded from the save running the same 10
    net, comp, opt, _ = _ddp_run("ef(q4)", rank, 10)
    saved = (copy.deepcopy(net.state_dict()), copy.deepcopy(opt.state_dict()), comp.state_dict())
    r["stateful_buckets"] = len(saved[2]["codecs"])
    batches = _ddp_batches(rank, 20)[10:]
    def more(net, comp, opt):
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp = DDP(net)
        ddp.register_comm_hook(comp, pzt.ddp_hook)
        for x, y in batches:
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        return [p.detach().clone() for p in net.parameters()]
    a = more(net, comp, opt)
    net2 = _ddp_net()
    net2.load_state_dict(saved[0])
    opt2 = torch.optim.SGD(net2.parameters(), lr=0.05, momentum=0.9)
    opt2.load_state_dict(saved[1])
    comp2 = pzt.DDPCompression("ef(q4)")
    comp2.load_state_dict(saved[2])
    b = more(net2, comp2, opt2)
    fresh = pzt.DDPCompression("ef(q4)")
    c = more(*(lambda n: (n, fresh, torch.optim.SGD(n.parameters(), lr=0.05, momentum=0.9)))(_ddp_net()))
    r["resumed_equal"] = all(torch.equal(x, y) for x, y in zip(a, b))
    try:
        pzt.DDPCompression("q4").load_state_dict(saved[2])
    except pipezip.Error as e:
        r["mismatch"] = str(e)
    try:
        pzt.DDPCompression("ef21(q4)")
    except ValueError as e:
        r["refused"] = str(e)
    del c
    if rank == 0:
        torch.save(r, out)
    dist.barrier()
    dist.destroy_process_group()


class _Two(torch.nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.a = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh())
        self.b = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def _batches():
    g = torch.Generator().manual_seed(9)
    X = torch.randn(5, 8, 10, generator=g)
    Y = torch.randint(0, 4, (5, 8), generator=g)
    return X, Y


FWD, BWD = "ef(q4)", "ef21(q8)"


def _stage_worker(rank, path, schedule, out):
    from pipezip.pipeline import Stage
    _init(rank, 2, path + ".rdv")
    net = _Two()
    part = net.a if rank == 0 else net.b
    opt = torch.optim.SGD(part.parameters(), lr=0.1)
    st = Stage(part, fwd=FWD, bwd=BWD, micro_batches=2, schedule=schedule)
    X, Y = _batches()
    losses = []
    for s in range(5):
        opt.zero_grad()
        loss = st.train_step(inputs=X[s] if st.first else None, targets=Y[s] if st.last else None,
                             loss_fn=torch.nn.functional.cross_entropy)
        opt.step()
        losses.append(loss)
    ev = st.evaluate(inputs=X[0] if st.first else None, targets=Y[0] if st.last else None,
                     loss_fn=torch.nn.functional.cross_entropy)
    rows = st.boundary_stats()
    torch.save({"params": [p.detach().clone() for p in part.parameters()], "losses": losses, "eval": ev,
                "rows": rows}, out + f".{rank}")
    dist.destroy_process_group()


def _resume_worker(rank, path, out):
    """3 steps, a checkpoint (module, optimizer, stage), 2 steps; back to the
    checkpoint, the same 2 steps; back again without the stage's state"""
    import copy
    from pipezip.pipeline import Stage
    _init(rank, 2, path + ".rdv")
    net = _Two()
    part = net.a if rank == 0 else net.b
    opt = torch.optim.SGD(part.parameters(), lr=0.1, momentum=0.9)
    st = Stage(part, fwd=FWD, bwd=BWD, micro_batches=2)
    X, Y = _batches()

    def steps(a, b):
        for s in range(a, b):
            opt.zero_grad()
            st.train_step(inputs=X[s] if st.first else None, targets=Y[s] if st.last else None,
                          loss_fn=torch.nn.functional.cross_entropy)
            opt.step()
        return [p.detach().clone() for p in part.parameters()]
    steps(0, 3)
    ck = copy.deepcopy({"m": part.state_dict(), "o": opt.state_dict(), "s": st.state_dict()})
    a = steps(3, 5)
    part.load_state_dict(ck["m"]), opt.load_state_dict(ck["o"]), st.load_state_dict(ck["s"])
    b = steps(3, 5)
    part.load_state_dict(ck["m"]), opt.load_state_dict(ck["o"])
    c = steps(3, 5)
    torch.save({"a": a, "b": b, "c": c, "steps": st.steps}, out + f".{rank}")
    dist.destroy_process_group()


def _local(schedule):
    """the same model in one process: Boundary objects, micro-batches in order"""
    import pipezip.torch as pzt
    net = _Two()
    cut = pzt.Boundary(FWD, BWD)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    X, Y = _batches()
    losses = []
    for s in range(5):
        opt.zero_grad()
        total = 0.0
        outs = []
        for xm, ym in zip(torch.chunk(X[s], 2), torch.chunk(Y[s], 2)):
            loss = torch.nn.functional.cross_entropy(net.b(cut(net.a(xm))), ym) / 2
            if schedule == "gpipe":
                outs.append(loss)
            else:
                loss.backward()
            total += float(loss)
        for loss in outs:
            loss.backward()
        opt.step()
        losses.append(total)
    return [p.detach() for p in net.parameters()], losses, cut


@unittest.skipIf(torch is None or not dist.is_available() or not dist.is_gloo_available(), "no torch with gloo")
class OverGloo(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "x")

    def tearDown(self):
        self.dir.cleanup()

    def test_frames_are_the_libraries_and_state_stays_in_step(self):
        mp.spawn(_frames_worker, args=(self.path, self.path + ".out"), nprocs=2, join=True)
        r = torch.load(self.path + ".out")
        g = torch.Generator().manual_seed(3)
        xs = [torch.randn(4, 16, 32, generator=g) for _ in range(4)]
        tx, rx = pipezip.Codec("ef21(q4)"), pipezip.Codec("ef21(q4)")
        q = pipezip.Codec("q4:per=token")  # (each frame names the codec's seed for it: one sender, in order)
        for i, x in enumerate(xs):
            self.assertEqual(r["got"][2 * i], q.encode(x))
            self.assertEqual(r["got"][2 * i + 1], rx.decode(tx.encode(x)).tobytes())
        self.assertEqual(r["rx_ok"], (4, 16, 32))
        self.assertEqual(len(r["errs"]), 1)
        self.assertEqual(r["errs"][0][0], "CODEC")
        self.assertIn("ef21(q8", r["errs"][0][1])
        self.assertIn("ef21(q4", r["errs"][0][1])

    def check_stage(self, schedule):
        mp.spawn(_stage_worker, args=(self.path, schedule, self.path + ".out"), nprocs=2, join=True)
        r0, r1 = torch.load(self.path + ".out.0"), torch.load(self.path + ".out.1")
        want, losses, cut = _local(schedule)
        got = r0["params"] + r1["params"]
        self.assertEqual(len(got), len(want))
        for a, b in zip(got, want):
            self.assertTrue(torch.equal(a, b), schedule)
        self.assertEqual(r1["losses"], losses)
        self.assertIsNone(r0["losses"][0])
        s = cut.stats()
        row = r0["rows"][0]
        self.assertEqual(row, r1["rows"][0])
        self.assertEqual((row["fwd_bytes"], row["bwd_bytes"]), (s["fwd_bytes"], s["bwd_bytes"]))
        self.assertEqual((row["fwd_frames"], row["bwd_frames"], row["eval_frames"]), (10, 10, 2))
        self.assertGreater(r1["eval"], 0)

    def test_ddp_hook(self):
        """pipezip's DDP hook: "none" is plain DDP bit for bit; q8 trains as
        plain DDP within 2% of its final loss and sends a quarter of the
        bytes (its frames are the codec's); ef(q2) and lowrank:2 train;
        a hook resumed from state_dict() steps as the one never stopped"""
        mp.spawn(_ddp_worker, args=(self.path, self.path + ".out"), nprocs=2, join=True)
        r = torch.load(self.path + ".out")
        self.assertTrue(r["none_equal"])
        self.assertEqual(r["none"], r["plain"])
        self.assertTrue(r["frames_match"])
        self.assertLess(abs(r["q8"][-1] - r["plain"][-1]), 0.02 * r["plain"][-1] + 1e-4, (r["q8"][-1], r["plain"][-1]))
        s = r["q8_stats"]
        self.assertEqual(s["frames"], 30)
        self.assertTrue(3.5 < s["ratio"] < 4.0, s)
        self.assertLess(r["ef"][-1], 0.3 * r["ef"][0])
        self.assertLess(r["lowrank"][-1], 0.5 * r["lowrank"][0])
        self.assertTrue(r["ef_stats"]["ratio"] > 10, r["ef_stats"])
        self.assertEqual(r["stateful_buckets"], 1)
        self.assertTrue(r["resumed_equal"])
        self.assertIn("'ef(q4", r["mismatch"])
        self.assertIn("keeps receiver state", r["refused"])

    def test_stage_checkpoint_resumes_exactly(self):
        mp.spawn(_resume_worker, args=(self.path, self.path + ".out"), nprocs=2, join=True)
        differs = False
        for rank in (0, 1):
            r = torch.load(self.path + f".out.{rank}")
            for a, b in zip(r["a"], r["b"]):
                self.assertTrue(torch.equal(a, b), f"rank {rank}: resumed with the stage's state")
            differs |= any(not torch.equal(a, c) for a, c in zip(r["a"], r["c"]))
            self.assertEqual(r["steps"], 7)
        self.assertTrue(differs, "without the stage's codec state the run differs (so the check can fail)")

    def test_stage_1f1b_equals_one_process(self):
        self.check_stage("1f1b")

    def test_stage_gpipe_equals_one_process(self):
        self.check_stage("gpipe")


if __name__ == "__main__":
    unittest.main()
