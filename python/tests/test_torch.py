# SPDX-License-Identifier: MIT
"""pipezip.torch: compress() with none/none is an exact identity for values
and gradients; q4/q8 boundaries really encode (bytes counted as the frames'
lengths) and a small split model trains through them far above chance;
stateful codecs in a Boundary; the gradient is the backward codec's decode
of the true gradient."""
import unittest

import numpy as np

try:
    import torch
except ImportError:  # torch is optional
    torch = None

import pipezip

if torch is not None:
    import pipezip.torch as pzt


@unittest.skipIf(torch is None, "torch is not installed")
class Compress(unittest.TestCase):
    def test_none_is_identity(self):
        torch.manual_seed(0)
        x = torch.randn(8, 3, 5, 5, requires_grad=True)
        w = torch.randn(8, 3, 5, 5)
        y = pzt.compress(x, fwd="none", bwd="none")
        self.assertTrue(torch.equal(y, x))
        (y * w).sum().backward()
        self.assertTrue(torch.equal(x.grad, w))

    def test_gradient_is_the_backward_codecs_decode(self):
        torch.manual_seed(1)
        x = torch.randn(4, 16, requires_grad=True)
        g = torch.randn(4, 16)
        y = pzt.compress(x, fwd="q4", bwd="q8")
        want_y = pipezip.Codec("q4").decode(pipezip.Codec("q4").encode(x.detach()))
        self.assertTrue(np.array_equal(y.detach().numpy(), want_y))
        y.backward(g)
        want_g = pipezip.Codec("q8").decode(pipezip.Codec("q8").encode(g))
        self.assertTrue(np.array_equal(x.grad.numpy(), want_g))

    def test_stateful_needs_a_boundary(self):
        with self.assertRaises(ValueError):
            pzt.compress(torch.randn(2, 2, requires_grad=True), fwd="ef(q4)")

    def test_split_model_trains_and_counts_bytes(self):
        torch.manual_seed(2)
        rng = np.random.default_rng(2)
        # four Gaussian classes in 20 dimensions
        centers = rng.standard_normal((4, 20)).astype(np.float32) * 2.0
        labels = rng.integers(0, 4, 2048)
        data = centers[labels] + rng.standard_normal((2048, 20)).astype(np.float32)
        X, Y = torch.from_numpy(data), torch.from_numpy(labels)
        body = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU())
        head = torch.nn.Linear(64, 4)
        cut = pzt.Boundary(fwd="q4", bwd="q8", measure_error=True)
        opt = torch.optim.SGD(list(body.parameters()) + list(head.parameters()), lr=0.1, momentum=0.9)
        frames = 0
        for epoch in range(3):
            for i in range(0, 2048, 64):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(head(cut(body(X[i:i + 64]))), Y[i:i + 64])
                loss.backward()
                opt.step()
                frames += 1
        with torch.no_grad():
            acc = (head(cut(body(X))).argmax(1) == Y).float().mean().item()
        self.assertGreater(acc, 0.8)  # chance is 0.25
        s = cut.stats()
        self.assertEqual(s["bwd_frames"], frames)
        self.assertEqual(s["fwd_frames"], frames)  # the no_grad forward is evaluation
        self.assertEqual(s["eval_frames"], 1)
        # every training frame of q4 over 64 x 64: the header, one scale pair per
        # tensor and 4 bits an element (what pipezip.Codec says)
        one = len(pipezip.Codec("q4").encode(np.ones((64, 64), np.float32)))
        self.assertEqual(s["fwd_bytes"], frames * one)
        self.assertEqual(s["eval_bytes"], len(pipezip.Codec("q4").encode(np.ones((2048, 64), np.float32))))
        self.assertAlmostEqual(s["bwd_bits_per_element"], 8.0 * s["bwd_bytes"] / s["bwd_elements"])
        self.assertLess(s["fwd_bits_per_element"], 4.2)
        self.assertLess(s["bwd_bits_per_element"], 8.2)
        self.assertGreater(s["fwd_rel_error"], 0.0)
        self.assertLess(s["bwd_rel_error"], s["fwd_rel_error"])

    def test_boundary_with_error_feedback_and_aqsgd(self):
        torch.manual_seed(3)
        b = pzt.Boundary(fwd="ef(topk:0.1)", bwd="ef21(q4)")
        x = torch.randn(4, 32, requires_grad=True)
        for _ in range(5):
            y = b(x)
            y.sum().backward()
        self.assertEqual(b.stats()["fwd_frames"], 5)
        a = pzt.Boundary(fwd="aqsgd(q4)", bwd="q8")
        ids = np.arange(4, dtype=np.uint32)
        for _ in range(3):
            a(x, ids=ids).sum().backward()
        with self.assertRaises(pipezip.Error):
            a(x).sum()  # aqsgd needs the sample ids

    def test_half_inputs(self):
        x = torch.randn(4, 8).to(torch.bfloat16).requires_grad_()
        y = pzt.compress(x, fwd="bf16", bwd="bf16")
        self.assertEqual(y.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(y, x))


@unittest.skipIf(torch is None, "torch is not installed")
class Checkpointing(unittest.TestCase):
    """torch.utils.checkpoint around a Boundary, both forms: one training frame
    a step each way, the codec state moved once, the same losses, parameters
    and state as without checkpointing"""

    def _model(self, spec):
        torch.manual_seed(0)
        return torch.nn.ModuleDict({"a": torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU()),
                                    "b": pzt.Boundary(spec, "ef21(q4)", seed=3), "c": torch.nn.Linear(8, 3)})

    def test_both_forms_with_ef_and_aqsgd(self):
        from torch.utils.checkpoint import checkpoint
        for reentrant in (True, False):
            for spec in ("ef(q4)", "aqsgd(q4)"):
                plain, ck = self._model(spec), self._model(spec)
                opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (plain, ck)]
                for step in range(4):
                    torch.manual_seed(10 + step % 2)  # two batches in turn: aqsgd's rows come back
                    x = torch.randn(5, 6, requires_grad=True)
                    ids = torch.arange(5) + 5 * (step % 2)

                    def f(m):
                        return lambda x: m["c"](m["b"](m["a"](x), ids))

                    losses = [f(plain)(x).square().mean(), checkpoint(f(ck), x, use_reentrant=reentrant).square().mean()]
                    for loss, o in zip(losses, opts):
                        loss.backward()
                        o.step()
                        o.zero_grad()
                    self.assertTrue(torch.equal(losses[0], losses[1]), (reentrant, spec, step, losses))
                s = ck["b"].stats()
                self.assertEqual((s["fwd_frames"], s["bwd_frames"], s["eval_frames"]), (4, 4, 0), (reentrant, spec))
                self.assertEqual(s["fwd_bytes"], plain["b"].stats()["fwd_bytes"])
                self.assertTrue(all(torch.equal(p, q) for p, q in zip(plain.parameters(), ck.parameters())))
                self.assertEqual(plain["b"].get_extra_state()["codecs"], ck["b"].get_extra_state()["codecs"])

    def test_a_recomputation_that_differs_is_refused(self):
        from torch.utils.checkpoint import checkpoint
        m = self._model("ef(q4)")
        drop = torch.nn.Dropout(0.5)

        def f(x):
            return m["c"](m["b"](drop(m["a"](x))))

        x = torch.randn(5, 6, requires_grad=True)
        loss = checkpoint(f, x, use_reentrant=True, preserve_rng_state=False).square().mean()
        with self.assertRaisesRegex(RuntimeError, "recomputed this boundary with an input that differs"):
            loss.backward()


@unittest.skipIf(torch is None, "torch is not installed")
class Tracing(unittest.TestCase):
    def _model(self, fwd="q4", bwd="q8"):
        torch.manual_seed(3)
        return torch.nn.Sequential(torch.nn.Linear(6, 5), pzt.Boundary(fwd, bwd, seed=4), torch.nn.Linear(5, 3))

    def test_fx_keeps_the_boundary_as_a_leaf(self):
        # the traced graph calls the Boundary module itself: the same outputs,
        # gradients and frames as the eager model, and the EF state moves once a step
        eager, traced = self._model("ef(topk:0.4)"), self._model("ef(topk:0.4)")
        g = torch.fx.symbolic_trace(traced)
        calls = [n.target for n in g.graph.nodes if n.op == "call_module"]
        self.assertEqual(calls, ["0", "1", "2"])
        x = torch.randn(7, 6)
        for _ in range(3):
            for m in (eager, g):
                m.zero_grad()
                m(x).square().sum().backward()
            self.assertTrue(torch.equal(eager(x), g(x)))
            self.assertTrue(torch.equal(eager[0].weight.grad, g.get_submodule("0").weight.grad))
        a, b = eager[1].stats(), g.get_submodule("1").stats()
        self.assertEqual((a["fwd_frames"], a["bwd_frames"], a["fwd_bytes"]), (b["fwd_frames"], b["bwd_frames"], b["fwd_bytes"]))
        self.assertEqual(b["bwd_frames"], 3)
        self.assertIs(g.get_submodule("1"), traced[1])

    def test_fx_passes_ids(self):
        b = pzt.Boundary("aqsgd(q4)", "q8")

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.b = b

            def forward(self, x, ids):
                return self.b(x, ids)

        g = torch.fx.symbolic_trace(Net())
        node = [n for n in g.graph.nodes if n.op == "call_module"][0]
        self.assertEqual((node.target, len(node.args)), ("b", 2))

    def test_jit_trace_and_script_refuse_saying_what_to_do(self):
        m = self._model()
        with self.assertRaisesRegex(RuntimeError, "cannot be traced by torch.jit.trace.*Trace the modules on either side"):
            torch.jit.trace(m, torch.randn(2, 6))
        with self.assertRaisesRegex(RuntimeError, "cannot be compiled by torch.jit.script.*torch.fx.symbolic_trace"):
            torch.jit.script(m)
        # the halves around it trace, and the Boundary runs between them
        head, tail = torch.jit.trace(m[0], torch.randn(2, 6)), torch.jit.trace(m[2], torch.randn(2, 5))
        x = torch.randn(2, 6)
        self.assertTrue(torch.equal(tail(m[1](head(x))), m(x)))


if __name__ == "__main__":
    unittest.main()
