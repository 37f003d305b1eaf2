// Prints, as JSON, what Hugging Face's independent GGUF reader (@huggingface/gguf) sees in a
// file: header counts, typed metadata and the tensor table. Used by gguf_hf_oracle_test.
// Usage: node hf_gguf_dump.js PACKAGE_DIR FILE.gguf
"use strict";

const [pkgDir, file] = process.argv.slice(2);
if (!pkgDir || !file) {
  console.error("usage: node hf_gguf_dump.js PACKAGE_DIR FILE.gguf");
  process.exit(2);
}
const { gguf } = require(pkgDir);

(async () => {
  const r = await gguf(file, { allowLocalFile: true, typedMetadata: true });
  const header = new Set(["version", "tensor_count", "kv_count"]);
  const metadata = {};
  for (const [key, entry] of Object.entries(r.typedMetadata)) {
    if (header.has(key)) continue;
    metadata[key] = { type: entry.type, subType: entry.subType, value: entry.value };
  }
  const out = {
    version: r.metadata.version,
    tensor_count: r.metadata.tensor_count,
    kv_count: r.metadata.kv_count,
    tensor_data_offset: r.tensorDataOffset,
    little_endian: r.littleEndian,
    metadata,
    tensors: r.tensorInfos.map((t) => ({
      name: t.name,
      n_dims: t.n_dims,
      shape: t.shape,
      dtype: t.dtype,
      offset: t.offset,
    })),
  };
  // BigInts (u64/i64 values, counts, shapes, offsets) become decimal strings.
  process.stdout.write(JSON.stringify(out, (k, v) => (typeof v === "bigint" ? v.toString() : v)));
})().catch((e) => {
  console.error(String((e && e.stack) || e));
  process.exit(1);
});
