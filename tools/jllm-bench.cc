// jllm-bench: llama-bench's tests for jllm plans, plus the number that matters here: decode
// speed as a fraction of the bandwidth ceiling (measured read bandwidth / bytes per token).
//
//   jllm-bench 4b.plan 14b.plan                      pp512 and tg128 of each plan
//   jllm-bench 4b.plan -p 512 -n 128 -d 0,8192 -r 5  with tg128 @ d8192
//   jllm-bench 4b.plan --passes on.yaml,off.yaml     one row per pass file: a fusion's A/B
//   jllm-bench 4b.plan -o json                       llama-bench's JSON fields (+ jllm's)
//   jllm-bench --probe l2-prefetch                   a microbenchmark of the GPU itself, no plan
//
// Tokens are random ids (seeded). pp times a prefill of p tokens from position 0 (in chunks of
// --chunk); tg times n decode steps after d cached positions, each step sampling greedily on the
// device and feeding the sample back, as generation does. t/s is the mean ± sd over -r runs.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fileio/output_file.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/qwen3_graph.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "nlohmann/json.hpp"
#include "passes/pipeline.h"
#include "runtime/backend_factory.h"
#include "runtime/decode_cost.h"
#include "runtime/decode_timer.h"
#include "runtime/plan_file.h"
#include "runtime/plan_weights.h"
#include "tools/support/flag_checks.h"
#include "tools/support/tool_main.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string plan_path;
  std::string passes_path;  // empty: the plan's own graph
};

struct Row {
  std::string model, backend, passes, test;
  int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
  std::vector<double> seconds;  // per repetition
  int64_t tokens = 0;           // per repetition
  int64_t bytes_per_token = 0;  // tg: weights + KV at the depth
  double bandwidth_gbs = 0;
  int64_t model_bytes = 0, n_params = 0;
  std::string gpu;

  double Mean() const {
    double s = 0;
    for (double x : seconds) s += tokens / x;
    return seconds.empty() ? 0 : s / seconds.size();
  }
  double Sd() const {
    if (seconds.size() < 2) return 0;
    const double m = Mean();
    double v = 0;
    for (double x : seconds) v += (tokens / x - m) * (tokens / x - m);
    return std::sqrt(v / (seconds.size() - 1));
  }
  double Ceiling() const {
    return bytes_per_token > 0 && bandwidth_gbs > 0 ? bandwidth_gbs * 1e9 / bytes_per_token : 0;
  }
};

using jllm::tools::Fail;

// Counts beyond this are no benchmark (and their sums would overflow).
constexpr int64_t kMaxCount = int64_t{1} << 31;

absl::StatusOr<std::vector<int64_t>> ParseList(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(item, &v) || v < 0 || v > kMaxCount) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", item, "' is not a count in [0, ", kMaxCount, "]"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " is empty"));
  return out;
}

// The graph to run: the plan's, or its GGUF's rebuilt with another pass file.
absl::StatusOr<jllm::ir::Graph> GraphFor(const jllm::runtime::Plan& plan, const std::string& passes) {
  if (passes.empty()) return plan.graph;
  ASSIGN_OR_RETURN(jllm::passes::PipelineConfig config, jllm::passes::LoadPipelineConfig(passes));
  ASSIGN_OR_RETURN(auto file, jllm::gguf::GgufFile::Open(plan.weights.gguf_path));
  ASSIGN_OR_RETURN(jllm::ir::Graph g, jllm::gguf::BuildQwen3Graph(*file));
  RETURN_IF_ERROR(jllm::passes::RunPipeline(g, config).status());
  return g;
}

class Bench {
 public:
  Bench(jllm::Backend& backend, int64_t vocab, int64_t chunk, uint64_t seed)
      : backend_(backend), vocab_(vocab), chunk_(chunk), rng_(seed) {}

  std::vector<int32_t> Tokens(int64_t n) {
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab_ - 1));
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = pick(rng_);
    return t;
  }

  absl::Status Prefill(const std::vector<int32_t>& tokens, int64_t pos0) {
    for (size_t b = 0; b < tokens.size(); b += chunk_) {
      const size_t n = std::min<size_t>(chunk_, tokens.size() - b);
      RETURN_IF_ERROR(backend_.Step(absl::MakeConstSpan(tokens).subspan(b, n), pos0 + b, {}).status());
    }
    return absl::OkStatus();
  }

  // Seconds for a prefill of p tokens from position 0.
  absl::StatusOr<double> TimePrefill(int64_t p) {
    const std::vector<int32_t> t = Tokens(p);
    const auto start = Clock::now();
    RETURN_IF_ERROR(Prefill(t, 0));
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // Seconds for n greedy decode steps after `depth` positions (prefilled here once per depth).
  absl::StatusOr<double> TimeDecode(int64_t n, int64_t depth) {
    if (depth != depth_ready_) {
      RETURN_IF_ERROR(Prefill(Tokens(depth + 1), 0));
      depth_ready_ = depth;
    }
    return jllm::runtime::TimeGreedyDecode(backend_, Tokens(1)[0], n, depth);
  }

 private:
  jllm::Backend& backend_;
  int64_t vocab_, chunk_;
  std::mt19937 rng_;
  int64_t depth_ready_ = -1;
};

void PrintMarkdown(const std::vector<Row>& rows) {
  if (!rows.empty() && !rows[0].gpu.empty()) {
    std::printf("%s, read bandwidth %.0f GB/s (measured)\n\n", rows[0].gpu.c_str(), rows[0].bandwidth_gbs);
  }
  std::printf("| %-24s | %9s | %8s | %-7s | %-12s | %-14s | %16s | %11s | %9s |\n", "model", "size", "params",
              "backend", "passes", "test", "t/s", "ceiling t/s", "% ceiling");
  std::printf("| %s | %s: | %s: | %s | %s | %s | %s: | %s: | %s: |\n", std::string(24, '-').c_str(),
              std::string(8, '-').c_str(), std::string(7, '-').c_str(), std::string(7, '-').c_str(),
              std::string(12, '-').c_str(), std::string(14, '-').c_str(), std::string(15, '-').c_str(),
              std::string(10, '-').c_str(), std::string(8, '-').c_str());
  for (const Row& r : rows) {
    const double ceiling = r.test.rfind("tg", 0) == 0 ? r.Ceiling() : 0;
    std::printf("| %-24s | %6.2f GiB | %6.2f B | %-7s | %-12s | %-14s | %8.2f ± %5.2f | %11s | %9s |\n",
                r.model.substr(0, 24).c_str(), static_cast<double>(r.model_bytes) / (1ull << 30),
                static_cast<double>(r.n_params) / 1e9, r.backend.c_str(), r.passes.substr(0, 12).c_str(),
                r.test.c_str(), r.Mean(), r.Sd(), ceiling > 0 ? absl::StrFormat("%.0f", ceiling).c_str() : "-",
                ceiling > 0 ? absl::StrFormat("%.1f %%", 100 * r.Mean() / ceiling).c_str() : "-");
  }
}

nlohmann::json ToJson(const std::vector<Row>& rows);

void PrintJson(const std::vector<Row>& rows) { std::printf("%s\n", ToJson(rows).dump(2).c_str()); }

nlohmann::json ToJson(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j;
    j["model_filename"] = r.model;
    j["model_size"] = r.model_bytes;
    j["model_n_params"] = r.n_params;
    j["backends"] = r.backend;
    j["gpu_info"] = r.gpu;
    j["n_prompt"] = r.n_prompt;
    j["n_gen"] = r.n_gen;
    j["n_depth"] = r.n_depth;
    std::vector<double> ts, ns;
    double ns_sum = 0;
    for (double s : r.seconds) {
      ts.push_back(r.tokens / s);
      ns.push_back(s * 1e9);
      ns_sum += s * 1e9;
    }
    j["samples_ts"] = ts;
    j["samples_ns"] = ns;
    j["avg_ns"] = r.seconds.empty() ? 0 : ns_sum / r.seconds.size();
    j["avg_ts"] = r.Mean();
    j["stddev_ts"] = r.Sd();
    // jllm's own fields.
    j["test"] = r.test;
    j["passes"] = r.passes;
    j["bytes_per_token"] = r.bytes_per_token;
    j["read_bandwidth_gbs"] = r.bandwidth_gbs;
    j["ceiling_ts"] = r.Ceiling();
    j["ceiling_fraction"] = r.Ceiling() > 0 ? r.Mean() / r.Ceiling() : 0;
    out.push_back(j);
  }
  return out;
}

// --probe: the backend's device microbenchmark as a table (md) or JSON objects keyed by column.
int RunProbe(const std::string& probe, const std::string& backend_name, const std::string& format) {
  jllm::runtime::BackendRequest req;
  req.name = backend_name;
  auto backend = jllm::runtime::CreateBackend(req);
  if (!backend.ok()) return Fail(backend.status());
  for (const auto& n : backend->notices) std::fprintf(stderr, "jllm-bench: %s\n", n.c_str());
  const std::vector<std::string> names = backend->backend->ProbeNames();
  if (std::find(names.begin(), names.end(), probe) == names.end()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--probe ", probe, ": the ", std::string(backend->backend->name()), " backend's probes are ",
        names.empty() ? std::string("none (try --backend cuda on a GPU machine)") : absl::StrJoin(names, ", "))));
  }
  std::fprintf(stderr, "jllm-bench: probing %s on %s\n", probe.c_str(), backend->device.c_str());
  auto table = backend->backend->Probe(probe);
  if (!table.ok()) return Fail(table.status());
  for (const auto& r : table->rows) {  // a label's column, then one per value
    if (r.values.size() + 1 != table->columns.size()) {
      return Fail(absl::InternalError(absl::StrCat("--probe ", probe, ": row '", r.label, "' has ", r.values.size(),
                                                   " values for ", table->columns.size(), " columns")));
    }
  }
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : table->rows) {
      nlohmann::json j;
      j["probe"] = probe;
      j["gpu_info"] = backend->device;
      j[table->columns[0]] = r.label;
      for (size_t c = 0; c < r.values.size(); ++c) j[table->columns[c + 1]] = r.values[c];
      out.push_back(j);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %s\n\n|", backend->device.c_str(), table->title.c_str());
  for (const std::string& c : table->columns) std::printf(" %s |", c.c_str());
  std::printf("\n|");
  for (size_t c = 0; c < table->columns.size(); ++c) std::printf(c == 0 ? " --- |" : " ---: |");
  std::printf("\n");
  for (const auto& r : table->rows) {
    std::printf("| %s |", r.label.c_str());
    for (double v : r.values) std::printf(" %.3g |", v);
    std::printf("\n");
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"Benchmarks jllm plans: prefill (pp) and decode (tg) speed, and decode as a fraction "
               "of the bandwidth ceiling."};
  std::vector<std::string> plans;
  std::string prompt_list = "512", gen_list = "128", depth_list = "0", passes_list, format = "md";
  std::string backend_name = "auto", json_path;
  int reps = 5;
  int64_t chunk = 512;
  int64_t seed = 42;
  std::string probe;
  app.add_option("plans", plans, "plan files (from jllm-compile)");
  app.add_option("--probe", probe, "instead of plans: a microbenchmark of the device (cuda: l2-prefetch, "
                 "what each form of L2 prefetch leaves in L2)");
  app.add_option("-p,--n-prompt", prompt_list, "prompt lengths for pp tests, comma-separated (0: none)")
      ->capture_default_str();
  app.add_option("-n,--n-gen", gen_list, "decode lengths for tg tests, comma-separated (0: none)")
      ->capture_default_str();
  app.add_option("-d,--n-depth", depth_list, "cached positions before each tg test, comma-separated")
      ->capture_default_str();
  app.add_option("-r,--repetitions", reps, "runs of each test")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--passes", passes_list, "pass files, comma-separated: one row per file (rebuilds "
                 "the plan's GGUF with each); default: each plan as compiled");
  app.add_option("--chunk", chunk, "prefill chunk (tokens per step)")->check(CLI::Range(1, 8192))->capture_default_str();
  app.add_option("--backend", backend_name, "auto, cuda or cpu")
      ->check(CLI::IsMember(jllm::runtime::BackendNames()))
      ->capture_default_str();
  app.add_option("-o,--output", format, "md or json")->check(CLI::IsMember({"md", "json"}))->capture_default_str();
  app.add_option("--seed", seed, "seed of the random token ids")
      ->check(jllm::tools::IntRange(0, jllm::tools::kNoMax))
      ->capture_default_str();
  app.add_option("--json-out", json_path, "also write the JSON rows to FILE");
  CLI11_PARSE(app, argc, argv);
  if (!probe.empty()) {
    if (!plans.empty()) return Fail(absl::InvalidArgumentError("--probe measures the device alone: give it no plan files"));
    for (const char* flag : {"-p", "-n", "-d", "-r", "--passes", "--chunk", "--seed", "--json-out"}) {
      if (app.get_option(flag)->count() > 0) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--probe takes only --backend and -o; ", flag, " is for plans")));
      }
    }
    return RunProbe(probe, backend_name, format);
  }
  if (plans.empty()) return Fail(absl::InvalidArgumentError("no plan files: name one or more (from jllm-compile), or a --probe"));

  auto prompts = ParseList(prompt_list, "-p");
  auto gens = ParseList(gen_list, "-n");
  auto depths = ParseList(depth_list, "-d");
  for (const auto* l : {&prompts, &gens, &depths}) {
    if (!l->ok()) return Fail(l->status());
  }
  // --json-out is checked (never one of the inputs, the plans' GGUFs included, never a directory
  // or FIFO) before any work.
  std::unique_ptr<jllm::fileio::OutputFile> json_out;
  if (!json_path.empty()) {
    std::vector<std::string> inputs = plans;
    for (absl::string_view f : absl::StrSplit(passes_list, ',', absl::SkipEmpty())) inputs.emplace_back(f);
    for (const std::string& p : plans) {
      auto plan = jllm::runtime::ReadPlanFile(p);
      if (!plan.ok()) return Fail(plan.status());
      inputs.push_back(plan->weights.gguf_path);
    }
    auto created = jllm::fileio::OutputFile::Create(json_path, inputs);
    if (!created.ok()) return Fail(created.status());
    json_out = *std::move(created);
  }
  std::vector<Config> configs;
  for (const std::string& p : plans) {
    if (passes_list.empty()) {
      configs.push_back({p, ""});
    } else {
      for (absl::string_view f : absl::StrSplit(passes_list, ',', absl::SkipEmpty())) configs.push_back({p, std::string(f)});
    }
  }

  std::vector<Row> rows;
  for (const Config& c : configs) {
    auto plan = jllm::runtime::ReadPlanFile(c.plan_path);
    if (!plan.ok()) return Fail(plan.status());
    auto graph = GraphFor(*plan, c.passes_path);
    if (!graph.ok()) return Fail(graph.status());
    jllm::runtime::BackendRequest req;
    req.name = backend_name;
    req.plan = c.passes_path.empty() ? &*plan : nullptr;  // other passes: other kernels
    auto backend = jllm::runtime::CreateBackend(req);
    if (!backend.ok()) return Fail(backend.status());
    for (const auto& n : backend->notices) std::fprintf(stderr, "jllm-bench: %s\n", n.c_str());
    auto weights = jllm::runtime::PlanWeights::Open(plan->weights, c.plan_path);
    if (!weights.ok()) return Fail(weights.status());
    int64_t max_depth = 0, max_gen = 0, max_prompt = 0;
    for (int64_t d : *depths) max_depth = std::max(max_depth, d);
    for (int64_t n : *gens) max_gen = std::max(max_gen, n);
    for (int64_t p : *prompts) max_prompt = std::max(max_prompt, p);
    jllm::BackendOptions bo;
    bo.max_context = std::max(max_prompt, max_depth + max_gen + 1);
    bo.max_step_tokens = chunk;
    if (bo.max_context > graph->config.context_length) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("the tests need ", bo.max_context,
                                                          " positions; the model allows ",
                                                          graph->config.context_length)));
    }
    if (auto st = backend->backend->Load(*graph, **weights, bo); !st.ok()) return Fail(st);
    Row base;
    base.model = c.plan_path.substr(c.plan_path.find_last_of('/') + 1);
    base.backend = std::string(backend->backend->name());
    base.passes = c.passes_path.empty() ? "plan" : c.passes_path.substr(c.passes_path.find_last_of('/') + 1);
    base.model_bytes = jllm::runtime::WeightBytesPerToken(*graph);
    base.n_params = jllm::runtime::ParameterCount(*graph);
    base.gpu = backend->backend->Describe();
    if (auto bw = backend->backend->ReadBandwidthGBs(); bw.ok()) base.bandwidth_gbs = *bw;
    Bench bench(*backend->backend, graph->config.n_vocab, chunk, seed);
    for (int64_t p : *prompts) {
      if (p == 0) continue;
      Row r = base;
      r.test = absl::StrCat("pp", p);
      r.n_prompt = p;
      r.tokens = p;
      if (auto w = bench.TimePrefill(p); !w.ok()) return Fail(w.status());  // warm-up
      for (int i = 0; i < reps; ++i) {
        auto s = bench.TimePrefill(p);
        if (!s.ok()) return Fail(s.status());
        r.seconds.push_back(*s);
      }
      rows.push_back(r);
      if (format == "md") std::fprintf(stderr, "jllm-bench: %s %s: %.1f t/s\n", base.model.c_str(), r.test.c_str(), r.Mean());
    }
    for (int64_t d : *depths) {
      for (int64_t n : *gens) {
        if (n == 0) continue;
        Row r = base;
        r.test = d > 0 ? absl::StrCat("tg", n, " @ d", d) : absl::StrCat("tg", n);
        r.n_gen = n;
        r.n_depth = d;
        r.tokens = n;
        r.bytes_per_token = base.model_bytes + jllm::runtime::KvBytesPerToken(*graph, d + n / 2);
        if (auto w = bench.TimeDecode(std::min<int64_t>(n, 16), d); !w.ok()) return Fail(w.status());
        for (int i = 0; i < reps; ++i) {
          auto s = bench.TimeDecode(n, d);
          if (!s.ok()) return Fail(s.status());
          r.seconds.push_back(*s);
        }
        rows.push_back(r);
        if (format == "md") std::fprintf(stderr, "jllm-bench: %s %s: %.1f t/s\n", base.model.c_str(), r.test.c_str(), r.Mean());
      }
    }
  }
  if (format == "json") {
    PrintJson(rows);
  } else {
    PrintMarkdown(rows);
  }
  if (json_out) {
    if (auto st = json_out->Write(ToJson(rows).dump(2) + "\n"); !st.ok()) return Fail(st);
    if (auto st = json_out->Commit(); !st.ok()) return Fail(st);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-bench", argc, argv, Main); }
