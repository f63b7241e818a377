# SPDX-License-Identifier: MIT
"""The frame vocabulary walked value by value: every wire value the format
defines for an enumerated header field (codec, granularity, option bits,
value type, index coding, wrapper) is produced in a real frame, and
`pipezip codec inspect`, pipezip.inspect() and `pipezip codec --help` all
name it as the library's table does. A value added to a table without a
frame here fails the test (EXAMPLES has no entry for it).
Run: PIPEZIP=build/pipezip PYTHONPATH=python python3 -m unittest discover -s python/tests"""
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np

import pipezip

PZ = os.environ.get("PIPEZIP", os.path.join(os.path.dirname(__file__), "..", "..", "build", "pipezip"))

# (field, name) -> the spec whose frame carries that value, and what the
# CLI's inspect prints for it ("aqsgd-warmup": a warming-up aqsgd sender)
EXAMPLES = {
    ("codec", "none"): ("none", r"codec: +none \(id 0\)"),
    ("codec", "fp16"): ("fp16", r"codec: +fp16 \(id 1\)"),
    ("codec", "bf16"): ("bf16", r"codec: +bf16 \(id 2\)"),
    ("codec", "quant"): ("q4", r"codec: +quant \(id 3\)"),
    ("codec", "topk"): ("topk:0.2", r"codec: +topk \(id 4\)"),
    ("codec", "randk"): ("randk:0.2", r"codec: +randk \(id 5\)"),
    ("codec", "randtopk"): ("randtopk:0.2", r"codec: +randtopk \(id 6\)"),
    ("codec", "ms"): ("ms:0.1,bits=2", r"codec: +ms \(id 7\)"),
    ("codec", "lowrank"): ("lowrank:2", r"codec: +lowrank \(id 8\)\n(.|\n)*rank: +2 factors"),
    ("codec", "fp8"): ("fp8:e5m2,per=token", r"codec: +fp8 \(id 9\)\n(.|\n)*format: +E5M2 \(largest 57344\), a scale per token"),
    ("codec", "rvq"): ("rvq:3,bits=3", r"codec: +rvq \(id 10\)\n(.|\n)*codebooks: +2 stages of 8 entries over vectors of 3, a scale per token"),
    ("granularity", "tensor"): ("q4:per=tensor", r"per tensor"),
    ("granularity", "sample"): ("q4:per=sample", r"per sample"),
    ("granularity", "channel"): ("q4:per=channel", r"per channel"),
    ("granularity", "token"): ("q4:per=token", r"per token"),
    ("option", "sym"): ("q4:sym", r"symmetric"),
    ("option", "stoch"): ("q4:stoch", r"stochastic rounding"),
    ("option", "signed"): ("ms:0.1,bits=2,signed", r"2-bit codes, signed"),
    ("option", "unbiased"): ("randk:0.2,unbiased", r", unbiased"),
    ("option", "by=value"): ("topk:0.2,by=value", r"by value"),
    ("option", "rot"): ("q4:rot", r"rotated"),
    ("option", "bytes"): ("q4:bytes", r"one code per byte"),
    ("value_type", "fp32"): ("topk:0.2,values=fp32", r"values: +fp32"),
    ("value_type", "fp16"): ("topk:0.2,values=fp16", r"values: +fp16"),
    ("value_type", "bf16"): ("topk:0.2,values=bf16", r"values: +bf16"),
    ("value_type", "quantized"): ("topk:0.2,values=q4", r"values: +quantized \(4 bits\)"),
    ("index_coding", "none"): ("randk:0.2", r"values: +fp32\n"),
    ("index_coding", "bitmap"): ("topk:0.2,index=bitmap", r"positions as bitmap"),
    ("index_coding", "delta"): ("topk:0.2,index=delta", r"positions as delta"),
    ("wrapper", "none"): ("q4", r"codec: +quant \(id 3\)\n"),
    ("wrapper", "ef"): ("ef(q4)", r"wrapper ef\n"),
    ("wrapper", "ef21"): ("ef21(q4)", r"wrapper ef21\n"),
    ("wrapper", "aqsgd"): ("aqsgd(q4:sym)", r"wrapper aqsgd\n"),
    ("wrapper", "aqsgd-warmup"): ("aqsgd(q4:sym)", r"wrapper aqsgd-warmup\n"),
}

# what a user types in a spec for each value, as `pipezip codec --help` must
# show it (None: a value only frames carry, never typed)
SPEC_WORDS = {
    ("value_type", "quantized"): r"values=[a-z0-9|]*qB",
    ("index_coding", "none"): None,
    ("wrapper", "none"): None,
    ("wrapper", "aqsgd-warmup"): None,
    ("codec", "quant"): r"\bqB\b",
}


class FrameVocabulary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.x = np.random.default_rng(5).standard_normal((4, 3, 4, 6)).astype(np.float32)
        cls.vocab = pipezip.frame_vocabulary()
        cls.help = subprocess.run([PZ, "codec", "--help"], check=True, capture_output=True, text=True).stdout

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def frame(self, field, name):
        spec, _ = EXAMPLES[(field, name)]
        c = pipezip.Codec(spec)
        if name == "aqsgd-warmup":
            c.set_warmup(True)
        ids = np.arange(self.x.shape[0], dtype=np.uint32) if spec.startswith("aqsgd") else None
        return c.encode(self.x, ids=ids)

    def test_every_field_has_its_values(self):
        self.assertEqual(sorted(self.vocab), sorted(["codec", "granularity", "option", "value_type", "index_coding", "wrapper"]))
        self.assertEqual(self.vocab["granularity"], {0: "tensor", 1: "sample", 2: "channel", 3: "token"})
        for field, values in self.vocab.items():
            for v, name in values.items():
                self.assertIn((field, name), EXAMPLES, f"{field} value {v} ({name}) has no example frame in this test")

    def test_each_value_through_inspect_python_and_help(self):
        for field, values in self.vocab.items():
            for v, name in values.items():
                with self.subTest(field=field, value=name):
                    frame = self.frame(field, name)
                    info = pipezip.inspect(frame)
                    if field == "option":
                        self.assertIn(name, info["options"])
                        self.assertTrue(info["options_id"] & v)
                    else:
                        self.assertEqual(info[field], name)
                        self.assertEqual(info[field + "_id"], v)
                    path = os.path.join(self.tmp.name, "f.pzf")
                    with open(path, "wb") as f:
                        f.write(frame)
                    out = subprocess.run([PZ, "codec", "inspect", path], capture_output=True, text=True)
                    self.assertEqual(out.returncode, 0, out.stderr)
                    self.assertNotIn("(null)", out.stdout)
                    self.assertRegex(out.stdout, EXAMPLES[(field, name)][1])
                    word = SPEC_WORDS.get((field, name), re.escape(name).replace("=", "=[a-z|]*"))
                    if word is not None:
                        self.assertRegex(self.help, word, f"`pipezip codec --help` does not show {field} {name}")


if __name__ == "__main__":
    unittest.main()
