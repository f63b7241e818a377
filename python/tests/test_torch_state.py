# SPDX-License-Identifier: MIT
"""pipezip.torch's Boundary as a PyTorch user relies on it: evaluation
(eval() or no_grad) runs the base codec, moves no state and is counted
apart; state_dict() carries every codec's state, so torch.save/torch.load
mid-training resumes with exactly the frames and losses of an
uninterrupted run; deepcopy and pickle keep the state; a receiver of
another spec refuses frames and saved state, naming both."""
import copy
import io
import pickle
import unittest

import numpy as np

try:
    import torch
except ImportError:  # torch is optional
    torch = None

import pipezip

if torch is not None:
    import pipezip.torch as pzt

    class Net(torch.nn.Module):
        """two cuts: error feedback on TopK forward, EF21 back; AQ-SGD with
        stochastic rounding (a random stream) forward, plain q8 back"""

        def __init__(self, tap=None):
            super().__init__()
            self.a, self.b, self.c = torch.nn.Linear(12, 24), torch.nn.Linear(24, 24), torch.nn.Linear(24, 3)
            self.cut1 = pzt.Boundary("ef(topk:0.2)", "ef21(q4)", tap=tap)
            self.cut2 = pzt.Boundary("aqsgd(q4:stoch)", "q8", tap=tap, max_samples=64)

        def forward(self, x, ids=None):
            h = self.cut1(torch.tanh(self.a(x)))
            h = self.cut2(torch.tanh(self.b(h)), ids=ids)
            return self.c(h)


def _data():
    g = torch.Generator().manual_seed(7)
    X = torch.randn(64, 12, generator=g)
    Y = (X[:, 0] > 0).long() + (X[:, 1] > 0).long()
    return X, Y


def _steps(model, opt, first, last, frames, losses):
    X, Y = _data()
    for s in range(first, last):
        i = (s * 16) % 64
        ids = np.arange(i, i + 16, dtype=np.uint32)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(X[i:i + 16], ids=ids), Y[i:i + 16])
        loss.backward()
        opt.step()
        losses.append(float(loss))


def _tapped():
    frames = []
    return frames, (lambda side, f: frames.append((side, f)))


@unittest.skipIf(torch is None, "torch is not installed")
class Evaluation(unittest.TestCase):
    def test_eval_leaves_state_and_training_counters_alone(self):
        torch.manual_seed(0)
        frames, tap = _tapped()
        m = Net(tap)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        _steps(m, opt, 0, 6, frames, [])
        before = {k: (v.clone() if torch.is_tensor(v) else copy.deepcopy(v)) for k, v in m.state_dict().items()}
        stats = [m.cut1.stats(), m.cut2.stats()]
        X, _ = _data()
        for mode in ("eval", "no_grad", "both"):
            n0 = len(frames)
            for _ in range(4):
                if mode == "eval":
                    m.eval()
                    m(X)  # grad enabled, eval mode; aqsgd needs no ids here
                    m.train()
                elif mode == "no_grad":
                    with torch.no_grad():
                        m(X)
                else:
                    m.eval()
                    with torch.no_grad():
                        m(X)
                    m.train()
            self.assertEqual([s for s, _ in frames[n0:]], ["eval"] * 8, mode)
            # eval frames are the base codecs' (no wrapper)
            self.assertEqual({pipezip.inspect(f)["wrapper"] for _, f in frames[n0:]}, {"none"})
        after = m.state_dict()
        for k in ("cut1._extra_state", "cut2._extra_state"):
            self.assertEqual(before[k]["codecs"][:4], after[k]["codecs"][:4], k)  # the four training ends
        for s0, b in ((stats[0], m.cut1), (stats[1], m.cut2)):
            s1 = b.stats()
            for side in ("fwd", "bwd"):
                for key in ("bytes", "frames", "elements"):
                    self.assertEqual(s0[f"{side}_{key}"], s1[f"{side}_{key}"])
            self.assertEqual(s1["eval_frames"], 12)
            self.assertEqual(s1["eval_elements"], 12 * 64 * 24)
        self.assertEqual(m.cut1.stats()["eval"], "topk:0.2,per=sample,values=fp32,by=magnitude,index=auto")


@unittest.skipIf(torch is None, "torch is not installed")
class Checkpoints(unittest.TestCase):
    def run_through(self, save_at=None, total=10):
        torch.manual_seed(1)
        frames, tap = _tapped()
        m = Net(tap)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        losses = []
        if save_at is None:
            _steps(m, opt, 0, total, frames, losses)
            return frames, losses
        _steps(m, opt, 0, save_at, frames, losses)
        buf = io.BytesIO()
        torch.save({"model": m.state_dict(), "opt": opt.state_dict()}, buf)
        del m, opt
        torch.manual_seed(99)  # a different fresh model, then the checkpoint
        m = Net(tap)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        buf.seek(0)
        ck = torch.load(buf)
        m.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        _steps(m, opt, save_at, total, frames, losses)
        return frames, losses

    def test_resume_sends_the_same_frames(self):
        want_frames, want_losses = self.run_through()
        got_frames, got_losses = self.run_through(save_at=5)
        self.assertEqual(len(want_frames), 40)
        self.assertEqual(got_losses, want_losses)
        self.assertEqual([f for _, f in got_frames], [f for _, f in want_frames])

    def test_without_the_codec_state_the_frames_differ(self):
        # the test above can fail: a resume that drops the codecs' state
        want_frames, _ = self.run_through()
        torch.manual_seed(1)
        frames, tap = _tapped()
        m = Net(tap)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        _steps(m, opt, 0, 5, frames, [])
        sd = {k: v for k, v in m.state_dict().items() if not k.endswith("_extra_state")}
        m2 = Net(tap)
        m2.load_state_dict(sd, strict=False)
        _steps(m2, opt, 5, 10, frames, [])
        self.assertNotEqual([f for _, f in frames[20:]], [f for _, f in want_frames[20:]])

    def test_deepcopy_and_pickle_continue_alike(self):
        torch.manual_seed(2)
        frames, tap = _tapped()
        m = Net(tap)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        _steps(m, opt, 0, 3, frames, [])
        twins = [copy.deepcopy(m), pickle.loads(pickle.dumps(m))]
        runs = []
        for model in [m] + twins:
            f2, t2 = _tapped()
            model.cut1.tap = model.cut2.tap = t2
            o = torch.optim.SGD(model.parameters(), lr=0.1)
            _steps(model, o, 3, 6, f2, [])
            runs.append([f for _, f in f2])
        self.assertEqual(runs[1], runs[0])
        self.assertEqual(runs[2], runs[0])

    def test_state_of_another_spec_is_refused(self):
        a = pzt.Boundary("ef21(q8)", "q8")
        b = pzt.Boundary("ef21(q4)", "q8")
        with self.assertRaises(pipezip.Error) as e:
            b.load_state_dict(a.state_dict())
        self.assertIn("ef21(q8)", str(e.exception))
        self.assertIn("ef21(q4)", str(e.exception))


@unittest.skipIf(torch is None, "torch is not installed")
class EmulatedLink(unittest.TestCase):
    """pipezip.torch.Link on a clock of its own (no real time): frames
    leave one after another at the link's rate and arrive a latency later;
    the receiver waits only for what is still on the wire."""

    def test_frames_queue_and_arrive(self):
        now = [10.0]
        slept = []
        link = pzt.Link("8mbit", "50ms", clock=lambda: now[0], sleep=lambda s: slept.append(s))
        # 1 MB at 8 Mbit/s: 1 s on the wire; the second frame waits for the first
        self.assertAlmostEqual(link.depart(1_000_000), 10.0 + 1.0 + 0.05)
        self.assertAlmostEqual(link.depart(500_000), 10.0 + 1.5 + 0.05)
        now[0] = 11.0
        link.arrive(11.05)
        now[0] = 12.0
        link.arrive(11.55)  # already there: no wait
        self.assertEqual(len(slept), 1)
        self.assertAlmostEqual(slept[0], 0.05)
        now[0] = 20.0  # an idle link starts from now
        self.assertAlmostEqual(link.depart(125), 20.0 + 1000 / 8e6 + 0.05)

    def test_shared_wire(self):
        """the shared model (ProtocolNanoGPT's meter): the sender stamps when it
        sent; the receiver's one wire, shared by both directions, is held for
        each message's transmission and latency in the order it takes them"""
        now = [10.0]
        slept = []
        wire = pzt.Wire()
        clock, sleep = (lambda: now[0]), (lambda s: slept.append(s))
        fwd = pzt.Link("8mbit", "50ms", clock=clock, sleep=sleep, model="shared")
        rx_a = pzt.Link("8mbit", "50ms", clock=clock, sleep=sleep, model="shared", wire=wire)
        rx_b = pzt.Link("8mbit", "50ms", clock=clock, sleep=sleep, model="shared", wire=wire)
        self.assertEqual(fwd.depart(1_000_000), 10.0)  # the time sent
        self.assertAlmostEqual(rx_a.arrive(10.0, 1_000_000), 11.05)
        now[0] = 11.05
        # a gradient from the other side, sent at 10.5, waits for the wire: 11.05 + 0.5 s + 50 ms
        self.assertAlmostEqual(rx_b.arrive(10.5, 500_000), 11.6)
        self.assertAlmostEqual(sum(slept), 1.6)
        # the duplex model would have overlapped them
        d = pzt.Link("8mbit", "50ms", clock=clock, sleep=sleep)
        self.assertAlmostEqual(d.depart(500_000), now[0] + 0.5 + 0.05)
        with self.assertRaises(ValueError):
            pzt.Link("8mbit", model="half")

    def test_bad_settings_are_refused(self):
        for bw in ("fast", "-1mbit", "mbit", "1e8", -5):
            with self.assertRaises(ValueError):
                pzt.Link(bw)
        for lat in ("soon", "5", "-1ms", -0.5):
            with self.assertRaises(ValueError):
                pzt.Link("1gbit", lat)
        self.assertEqual(pzt.Link("1.5gbit").bandwidth, 1.5e9)
        self.assertEqual(pzt.Link(1e8, 0.01).latency, 0.01)
        # pipezip train's grammar, not a copy of it: bytes per second, microseconds, "0" unlimited
        self.assertEqual(pzt.Link("12.5MB/s").bandwidth, 1e8)
        self.assertEqual(pzt.Link("100Mbit/s", "250us").latency, 250e-6)
        self.assertEqual(pzt.Link("0").bandwidth, 0.0)
        self.assertAlmostEqual(pzt.Link("0", "10ms", clock=lambda: 1.0).depart(10**9), 1.01)


class Mismatch(unittest.TestCase):
    def refusal(self, tx_spec, rx_spec, seed):
        """(the frame, the message) of an rx_spec receiver refusing tx_spec's frame as CODEC"""
        x = np.random.default_rng(seed).standard_normal((8, 32)).astype(np.float32)
        f = pipezip.Codec(tx_spec).encode(x)
        with self.assertRaises(pipezip.Error) as e:
            pipezip.Codec(rx_spec).decode(f)
        self.assertEqual(e.exception.frame_error, "CODEC")
        return f, str(e.exception)

    def test_stateful_receiver_refuses_another_specs_frames(self):
        _, msg = self.refusal("ef21(q8)", "ef21(q4)", 0)
        self.assertIn("ef21(q8", msg)
        self.assertIn("ef21(q4", msg)

    def test_receiver_refuses_another_codec_and_decode_takes_any(self):
        f, msg = self.refusal("topk:0.1", "q4", 1)
        self.assertIn("topk", msg)
        self.assertIn("'q4", msg)
        x = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
        want = pipezip.Codec("topk:0.1").decode(f)
        self.assertTrue(np.array_equal(pipezip.decode(f), want))
        self.assertTrue(np.array_equal(pipezip.Codec("q4", strict=False).decode(f), want))
        with self.assertRaises(ValueError):
            pipezip.decode(pipezip.Codec("ef21(q4)").encode(x))  # needs its receiver

    def test_codec_pickles_with_its_state(self):
        x = np.random.default_rng(2).standard_normal((8, 32)).astype(np.float32)
        c = pipezip.Codec("ef(q2:stoch)", seed=5)
        c.encode(x)
        d = pickle.loads(pickle.dumps(c))
        e = copy.deepcopy(c)
        self.assertEqual(d.spec, c.spec)
        f = c.encode(x)
        self.assertEqual(d.encode(x), f)
        self.assertEqual(e.encode(x), f)


if __name__ == "__main__":
    unittest.main()
