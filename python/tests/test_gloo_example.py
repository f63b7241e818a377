# SPDX-License-Identifier: MIT
"""examples/torch_split_gloo.py: a PyTorch model split over two processes
(torch.distributed, gloo) shipping pipezip frames trains far above chance
(10 classes) through q4/q8 boundaries, and the bytes it reports are the
frames' (4 and 8 bits an element plus headers) against float32's."""
import json
import os
import subprocess
import sys
import unittest

try:
    import torch
    import torch.distributed as dist
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "torch_split_gloo.py")
DATA = "/usr/share/datasets/fashion-mnist"


@unittest.skipIf(torch is None or not dist.is_available(), "torch with torch.distributed is not installed")
@unittest.skipIf(not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")), "no Fashion-MNIST")
class GlooExample(unittest.TestCase):
    def test_two_processes_train_through_frames(self):
        out = subprocess.run([sys.executable, EXAMPLE, "--fwd", "q4", "--bwd", "q8", "--train", "4096", "--test", "1000",
                              "--json"], check=True, capture_output=True, text=True, timeout=600).stdout
        r = json.loads(out.strip().splitlines()[-1])
        self.assertGreater(r["test_accuracy"], 0.6, r)
        self.assertGreater(r["fwd_bits_per_element"], 4.0)
        self.assertLess(r["fwd_bits_per_element"], 4.1)
        self.assertGreater(r["bwd_bits_per_element"], 8.0)
        self.assertLess(r["bwd_bits_per_element"], 8.1)
        self.assertGreater(r["compression"], 5.0)
        self.assertEqual(r["fp32_bytes"], 4 * (64 * 32 * 7 * 7) * (4096 // 64) * 2)

    def test_bad_spec_is_refused_before_starting(self):
        p = subprocess.run([sys.executable, EXAMPLE, "--fwd", "q9"], capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("codec spec 'q9'", p.stderr)


if __name__ == "__main__":
    unittest.main()
