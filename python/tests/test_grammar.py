# SPDX-License-Identifier: MIT
"""One grammar for C and Python: the Python package reads rates, times,
schedule orders and the link emulator's arrivals through the library's
own functions, so what `pipezip train` takes, Python takes, and the other
way round. Each answer here is checked against an independent reference
(the unit arithmetic, and the schedules as the papers define them), and the
package's modules import without a circle."""
import importlib.util
import subprocess
import sys
import unittest

import pipezip


def gpipe(S, i, M):
    return [("F", m) for m in range(M)] + [("B", m) for m in range(M)]


def warm_then_alternate(warm, M):
    ops = [("F", m) for m in range(warm)]
    for k in range(M - warm):
        ops += [("F", warm + k), ("B", k)]
    return ops + [("B", m) for m in range(M - warm, M)]


def eager_1f1b(S, i, M):
    """1F1B after twice its warm-up: 2(S-1-i) forwards first"""
    return warm_then_alternate(min(2 * (S - i - 1), M), M)


def one_f_one_b(S, i, M):
    """PipeDream-Flush / Megatron's 1F1B: S-1-i forwards to fill the pipe,
    then one forward and one backward in turn, then the drain"""
    warm = min(S - i - 1, M)
    ops = [("F", m) for m in range(warm)]
    for k in range(M - warm):
        ops += [("F", warm + k), ("B", k)]
    return ops + [("B", m) for m in range(M - warm, M)]


class Grammar(unittest.TestCase):
    def test_bandwidth(self):
        table = {"200mbit": 2e8, "1gbit": 1e9, "10Mbit/s": 1e7, "500kbit": 5e5, "12.5MB/s": 1e8, "1GB/s": 8e9,
                 "100Mbps": 1e8, "0": 0.0, "2.5e3kbit": 2.5e6}
        for text, bps in table.items():
            self.assertAlmostEqual(pipezip.parse_bandwidth(text), bps, msg=text)
        for bad in ("fast", "mbit", "1e8", "12.5mb/s", "-1mbit", ""):
            with self.assertRaises(ValueError, msg=bad) as e:
                pipezip.parse_bandwidth(bad)
            self.assertIn("bandwidth", str(e.exception))

    def test_duration(self):
        table = {"50ms": 0.05, "250us": 250e-6, "1s": 1.0, "0": 0.0, "7ns": 7e-9, "1.5ms": 1.5e-3}
        for text, s in table.items():
            self.assertAlmostEqual(pipezip.parse_duration(text), s, msg=text)
        for bad in ("soon", "5", "5 min", "-1ms"):
            with self.assertRaises(ValueError, msg=bad):
                pipezip.parse_duration(bad)

    def test_the_cli_takes_what_python_takes(self):
        """pipezip time reads the same text into the same step (its bandwidth and latency are the library's)"""
        import os
        exe = os.environ.get("PIPEZIP")
        if not exe:
            self.skipTest("PIPEZIP not set")
        out = subprocess.run([exe, "time", "--model", "gpt-tiny", "--stages", "2", "--batch", "8", "--bytes-per-token", "512",
                              "--micro-batch-seconds", "0.01", "--link-bandwidth", "12.5MB/s", "--link-latency", "250us",
                              "--format", "json"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn('"link_bandwidth_bps": 100000000', out.stdout)

    def test_schedules(self):
        self.assertEqual(pipezip.schedules(), ("gpipe", "1f1b", "eager-1f1b", "async", "eager-async"))
        ref = {"gpipe": gpipe, "1f1b": one_f_one_b, "eager-1f1b": eager_1f1b}
        with self.assertRaisesRegex(ValueError, "into the next.*torchrun"):
            pipezip.schedule_order("async", 0, 4, 4)  # its micro-batches go on into the next step
        with self.assertRaisesRegex(ValueError, "into the next.*torchrun"):
            pipezip.schedule_order("eager-async", 1, 4, 4)
        for name in ref:
            for S in (1, 2, 3, 4, 8):
                for i in range(S):
                    for M in (1, 2, 3, 4, 7, 16):
                        self.assertEqual(pipezip.schedule_order(name, i, S, M), ref[name](S, i, M), (name, S, i, M))
        from pipezip.pipeline import SCHEDULES, schedule_order
        self.assertEqual(SCHEDULES, ("gpipe", "1f1b", "eager-1f1b"))
        self.assertEqual(schedule_order("1f1b", 0, 4, 6), one_f_one_b(4, 0, 6))
        for bad in (("zigzag", 0, 2, 2), ("1f1b", 2, 2, 2), ("gpipe", 0, 2, 0), ("gpipe", 0, 2, 10**6)):
            with self.assertRaises(ValueError, msg=str(bad)):
                pipezip.schedule_order(*bad)

    def test_link_arrival(self):
        # duplex: the sender's direction; 1 MB at 8 Mbit/s is 1 s, then 50 ms
        at, w = pipezip.link_arrival("duplex", 0.0, 10.0, 10**6, 8e6, 0.05)
        self.assertAlmostEqual(at, 11.05)
        self.assertAlmostEqual(w, 11.0)
        at, w = pipezip.link_arrival("duplex", w, 10.2, 10**6, 8e6, 0.05)  # waits for the direction
        self.assertAlmostEqual(at, 12.05)
        # shared: the receiver's wire is held for the transmission and the latency
        at, w = pipezip.link_arrival("shared", 0.0, 10.0, 10**6, 8e6, 0.05)
        self.assertAlmostEqual((at, w), (11.05, 11.05))
        at, w = pipezip.link_arrival("shared", w, 10.5, 500_000, 8e6, 0.05)
        self.assertAlmostEqual(at, 11.05 + 0.5 + 0.05)
        with self.assertRaises(ValueError):
            pipezip.link_arrival("half", 0.0, 0.0, 1, 1e6, 0.0)
        with self.assertRaises(ValueError):
            pipezip.link_arrival("duplex", 0.0, 0.0, 1, -1.0, 0.0)


class BaseCodec(unittest.TestCase):
    def test_base_is_the_value_not_a_string(self):
        for spec, base in (("ef(topk:0.1)", "topk:0.1"), ("aqsgd(q4:sym)+zstd", "q4:sym+zstd"), ("ef21(q8)", "q8"),
                           ("lowrank:4", "lowrank:4")):
            c = pipezip.Codec(spec)
            b = c.base(seed=3)
            self.assertEqual(b.spec, pipezip.Codec(base).spec, spec)
            self.assertEqual(b.spec, c.base_spec, spec)
            self.assertFalse(b.stateful and not c.spec.startswith("lowrank"), spec)


class Imports(unittest.TestCase):
    def test_no_circle(self):
        """each module imports on its own, in a fresh interpreter, in either order"""
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("no torch")
        for order in (("pipezip.pipeline", "pipezip.torch"), ("pipezip.torch", "pipezip.pipeline"), ("pipezip.distributed",)):
            code = "; ".join(f"import {m}" for m in order) + "; import pipezip.torch as t; assert t.Stage is __import__('pipezip.pipeline').pipeline.Stage"
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
        with open(importlib.util.find_spec("pipezip.pipeline").origin) as f:
            self.assertNotIn("from .torch", f.read())


if __name__ == "__main__":
    unittest.main()
