// Drives jllm-server with the official OpenAI client (npm "openai", pinned by scripts/setup.sh):
// models, chat (whole, streamed, and through the SDK's stream accumulator), completions (whole
// and streamed), an authenticated client, and an error the SDK must surface as a 400.
// The SDK's parsing of our JSON and SSE is the check.
//   node openai_client_check.js PACKAGE_DIR BASE_URL API_KEY
// Prints one line per check and a summary; exits 1 if any failed.
"use strict";
const [packageDir, baseURL, apiKey] = process.argv.slice(2);
if (!packageDir || !baseURL || !apiKey) {
  console.error("usage: node openai_client_check.js PACKAGE_DIR BASE_URL API_KEY");
  process.exit(2);
}
const OpenAI = require(packageDir);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });

let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) passed++; else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : ": " + JSON.stringify(detail)}`);
}

async function main() {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  check("models.list", models.length === 1 && models[0].object === "model", models);
  const model = models[0].id;

  const request = { model, messages: [{ role: "user", content: "Hi" }], temperature: 0, max_tokens: 12 };
  const whole = await client.chat.completions.create(request);
  const text = whole.choices[0].message.content;
  check("chat.completions.create", typeof text === "string" && text.length > 0 && whole.object === "chat.completion", whole);
  check("usage", whole.usage.total_tokens === whole.usage.prompt_tokens + whole.usage.completion_tokens, whole.usage);

  const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let streamed = "", finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      streamed += choice.delta.content ?? "";
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  check("streamed chat text equals the whole response", streamed === text, { streamed, text });
  check("streamed finish_reason", finish === whole.choices[0].finish_reason, { finish });
  check("include_usage", usage !== null && usage.completion_tokens === whole.usage.completion_tokens, usage);
  check("prompt cache reported", usage !== null && usage.prompt_tokens_details.cached_tokens > 0, usage);
  check("one chunk per token or so", chunks >= 3, { chunks });

  const runner = client.chat.completions.stream({ ...request });
  const final = await runner.finalChatCompletion();
  check("SDK stream accumulator", final.choices[0].message.content === text, final.choices[0].message);

  const completion = await client.completions.create({ model, prompt: "Hello", temperature: 0, max_tokens: 8 });
  const ctext = completion.choices[0].text;
  check("completions.create", typeof ctext === "string" && completion.object === "text_completion", completion);
  const cstream = await client.completions.create({ model, prompt: "Hello", temperature: 0, max_tokens: 8, stream: true });
  let cstreamed = "";
  for await (const chunk of cstream) for (const choice of chunk.choices) cstreamed += choice.text;
  check("streamed completion equals the whole one", cstreamed === ctext, { cstreamed, ctext });

  try {
    await client.chat.completions.create({ model, messages: [] });
    check("empty messages refused", false, "accepted");
  } catch (e) {
    check("empty messages refused with 400 naming the field",
          e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "messages", { status: e.status, param: e.param, message: e.message });
  }
  const stranger = new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 });
  try {
    await stranger.models.list();
    check("wrong key refused", false, "accepted");
  } catch (e) {
    check("wrong key refused with 401", e instanceof OpenAI.AuthenticationError && e.status === 401, { status: e.status });
  }
}

main()
  .catch((e) => { failed++; console.log(`FAIL unexpected: ${e.stack || e}`); })
  .finally(() => {
    console.log(`openai-client-check: ${passed} ok, ${failed} failing`);
    process.exitCode = failed === 0 ? 0 : 1;
  });
