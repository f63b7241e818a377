# SPDX-License-Identifier: MIT
"""pipezip's Python codecs against the C library's command line: frames byte
for byte equal to `pipezip codec encode`'s for every family and wrapper,
decodes equal to `pipezip codec decode`'s, stateful ends in sync over many
steps, state saved and restored, bad input raising the library's message.
Run: PIPEZIP=build/pipezip PYTHONPATH=python python3 -m unittest discover -s python/tests"""
import os
import subprocess
import tempfile
import unittest

import numpy as np

import pipezip

PZ = os.environ.get("PIPEZIP", os.path.join(os.path.dirname(__file__), "..", "..", "build", "pipezip"))

SPECS = ["none", "fp16", "bf16", "q1", "q2", "q4", "q8", "q4:sym", "q8:stoch", "q4:per=sample", "q8:sym,per=channel",
         "topk:0.01", "topk:0.1", "topk:0.3,values=q8", "randk:0.1", "randk:0.1,unbiased", "randtopk:0.1",
         "ms:0.01,bits=2", "ms:0.1,bits=4", "ef(topk:0.1)", "ef21(q4)", "aqsgd(q4)", "q4+zstd", "aqsgd(q2)+zstd:9"]


def activation(shape, seed):
    r = np.random.default_rng(seed)
    x = r.standard_normal(shape).astype(np.float32)
    return np.where(x > 0, x * x, 0).astype(np.float32)


class CodecAgainstCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.x = activation((8, 4, 6, 6), 3)
        cls.xpath = os.path.join(cls.tmp.name, "x.npy")
        np.save(cls.xpath, cls.x)
        cls.ids = np.arange(8, dtype=np.uint32) * 3
        cls.idpath = os.path.join(cls.tmp.name, "ids.u32")
        cls.ids.tofile(cls.idpath)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cli_frame(self, spec):
        out = os.path.join(self.tmp.name, "f.pzf")
        cmd = [PZ, "codec", "encode", "--codec", spec, self.xpath, out]
        if spec.startswith("aqsgd"):
            cmd[5:5] = ["--ids", self.idpath]
        subprocess.run(cmd, check=True, capture_output=True)
        with open(out, "rb") as f:
            return f.read()

    def test_frames_equal_the_cli(self):
        for spec in SPECS:
            with self.subTest(spec=spec):
                c = pipezip.Codec(spec)
                ids = self.ids if spec.startswith("aqsgd") else None
                frame = c.encode(self.x, ids=ids)
                self.assertEqual(frame, self.cli_frame(spec), spec)
                info = pipezip.inspect(frame)
                self.assertEqual(info["shape"], self.x.shape)
                self.assertEqual(info["frame_bytes"], len(frame))
                if "+zstd" in spec:  # half zeros: the codes shrink, and inspect says by how much
                    self.assertEqual(info["entropy"], "zstd")
                    self.assertLess(info["stored_body_bytes"], info["body_bytes"])
                else:
                    self.assertIsNone(info["entropy"])
                    self.assertEqual(info["stored_body_bytes"], info["body_bytes"])

    def test_decodes_equal_the_cli(self):
        for spec in SPECS:
            if spec.startswith(("ef", "aqsgd")):
                continue  # the CLI's decode is stateless
            with self.subTest(spec=spec):
                frame = self.cli_frame(spec)
                fpath, opath = os.path.join(self.tmp.name, "g.pzf"), os.path.join(self.tmp.name, "y.npy")
                with open(fpath, "wb") as f:
                    f.write(frame)
                subprocess.run([PZ, "codec", "decode", fpath, opath], check=True, capture_output=True)
                want = np.load(opath)
                got = pipezip.Codec(spec).decode(frame)
                self.assertEqual(got.shape, want.shape)
                self.assertTrue(np.array_equal(got.view(np.uint32), want.view(np.uint32)), spec)
                if spec == "none":
                    self.assertTrue(np.array_equal(got, self.x))

    def test_encode_into_and_decode_into(self):
        c = pipezip.Codec("q8")
        buf = bytearray(c.max_frame_bytes(self.x.shape))
        n = c.encode_into(self.x, buf)
        self.assertEqual(bytes(buf[:n]), pipezip.Codec("q8").encode(self.x))  # each encode advances the seed
        out = np.full(self.x.shape, np.nan, dtype=np.float32)
        r = c.decode(memoryview(buf)[:n], out=out)
        self.assertIs(r, out)
        self.assertTrue(np.array_equal(out, c.decode(bytes(buf[:n]))))
        c = pipezip.Codec("q8")
        n2, st = c.encode_into(self.x, buf, stats=True)
        self.assertEqual(n2, n)
        self.assertEqual(st.bytes, n)
        self.assertAlmostEqual(st.bits_per_element, 8.0 * n / self.x.size)
        x_hat = c.decode(bytes(buf[:n]))
        self.assertAlmostEqual(st.rel_error, float(np.linalg.norm(x_hat - self.x) / np.linalg.norm(self.x)), places=5)


class Stateful(unittest.TestCase):
    def test_ends_stay_in_sync(self):
        for spec in ["ef(topk:0.1)", "ef21(q4)", "ef(q2),per=sample", "aqsgd(q2)"]:
            with self.subTest(spec=spec):
                tx, rx = pipezip.Codec(spec), pipezip.Codec(spec)
                ids = np.arange(4, dtype=np.uint32)
                for step in range(40):
                    x = activation((4, 3, 5, 5), 100 + step) + 0.01 * step
                    i = ids if "aqsgd" in spec or "per=sample" in spec else None
                    y = rx.decode(tx.encode(x, ids=i))
                    self.assertEqual(y.shape, x.shape)
                    self.assertTrue(np.all(np.isfinite(y)))
                # a third end restored from the receiver's state decodes the
                # next frame exactly as the receiver does
                blob = rx.state()
                rx2 = pipezip.Codec(spec)
                rx2.load_state(blob)
                f = tx.encode(x, ids=i)
                self.assertTrue(np.array_equal(rx.decode(f), rx2.decode(f)))
                self.assertEqual(rx.state(), rx2.state())

    def test_error_feedback_tracks_the_sum(self):
        # EF's defining property: the decoded frames' running sum follows
        # the inputs' within one step's residual
        tx, rx = pipezip.Codec("ef(topk:0.05)"), pipezip.Codec("ef(topk:0.05)")
        sx = sy = 0
        for step in range(200):
            x = activation((2, 64), step)
            sx = sx + x
            sy = sy + rx.decode(tx.encode(x))
        self.assertLess(float(np.abs(sx - sy).max()), 0.2 * float(np.abs(sx).max()))


class BadInput(unittest.TestCase):
    def test_bad_spec(self):
        with self.assertRaises(pipezip.Error) as e:
            pipezip.Codec("q9")
        self.assertIn("q9", str(e.exception))
        self.assertEqual(e.exception.status, "PZ_ERR_ARG")

    def test_damaged_frames(self):
        x = activation((16, 16), 1)
        frame = bytearray(pipezip.Codec("q4").encode(x))
        c = pipezip.Codec("q4")
        frame[100] ^= 0x10
        with self.assertRaises(pipezip.Error) as e:
            c.decode(bytes(frame))
        self.assertEqual(e.exception.frame_error, "CHECKSUM")
        self.assertIn("checksum", str(e.exception))
        with self.assertRaises(pipezip.Error) as e:
            c.decode(bytes(frame[:40]))
        self.assertEqual(e.exception.frame_error, "TRUNCATED")
        with self.assertRaises(pipezip.Error) as e:
            pipezip.inspect(b"not a frame at all" * 10)
        self.assertEqual(e.exception.frame_error, "MAGIC")

    def test_non_finite_and_shapes(self):
        x = activation((4, 4), 2)
        x[1, 1] = np.nan
        with self.assertRaises(pipezip.Error) as e:
            pipezip.Codec("q4").encode(x)
        self.assertIn("not finite", str(e.exception))
        with self.assertRaises(ValueError):
            pipezip.Codec("q4").encode(np.zeros((1, 1, 1, 1, 2), np.float32))
        c = pipezip.Codec("q4")
        with self.assertRaises(pipezip.Error) as e:
            c.decode(c.encode(np.ones((4, 4), np.float32)), out=np.zeros(15, np.float32))
        self.assertEqual(e.exception.frame_error, "CAPACITY")
        self.assertIn("16 elements", str(e.exception))
        with self.assertRaises(ValueError):
            c.decode(c.encode(np.ones((4, 4), np.float32)), out=np.zeros(17, np.float32))
        with self.assertRaises(pipezip.Error):
            pipezip.Codec("aqsgd(q4)").encode(np.ones((4, 4), np.float32))  # ids are required

    def test_dtypes(self):
        x = activation((8, 8), 4)
        c = pipezip.Codec("fp16")
        self.assertEqual(c.encode(x.astype(np.float64)), c.encode(x))
        self.assertEqual(c.encode(np.asfortranarray(x)), c.encode(x))
        with self.assertRaises(TypeError):
            c.encode(np.array(["a"]))


class Misc(unittest.TestCase):
    def test_crc_and_version(self):
        self.assertEqual(pipezip.crc32c(b"123456789"), 0xE3069283)  # the standard check value
        out = subprocess.run([PZ, "--version"], check=True, capture_output=True, text=True).stdout
        self.assertIn(pipezip.library_version(), out)
        self.assertIn("topk", pipezip.codec_help())


if __name__ == "__main__":
    unittest.main()
