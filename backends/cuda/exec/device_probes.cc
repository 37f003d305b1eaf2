#include "backends/cuda/exec/device_probes.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

constexpr int kProbeThreads = 256;  // both probe kernels' __launch_bounds__

// A device allocation freed on scope exit.
class Buffer {
 public:
  static absl::StatusOr<Buffer> Allocate(DeviceApi& device, int64_t bytes, std::string_view what) {
    ASSIGN_OR_RETURN(void* p, device.Allocate(static_cast<size_t>(bytes), what));
    return Buffer(device, p);
  }
  Buffer(Buffer&& o) noexcept : device_(o.device_), p_(o.p_) { o.p_ = nullptr; }
  Buffer& operator=(Buffer&&) = delete;
  ~Buffer() {
    if (p_ != nullptr) device_->Free(p_);
  }
  void* get() const { return p_; }

 private:
  Buffer(DeviceApi& device, void* p) : device_(&device), p_(p) {}
  DeviceApi* device_;
  void* p_;
};

absl::StatusOr<KernelHandle> LoadProbe(DeviceApi& device, const char* source, const char* kernel) {
  KernelSpec spec;
  spec.label = kernel;
  spec.source = source;
  spec.kernel = kernel;
  spec.threads = kProbeThreads;
  return device.LoadKernel(spec, "");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

absl::StatusOr<double> MeasureReadBandwidth(DeviceApi& device) {
  ASSIGN_OR_RETURN(const int64_t free_bytes, device.FreeBytes());
  const int64_t kBytes = std::min<int64_t>(int64_t{2} << 30, free_bytes / 2) / 4096 * 4096;
  if (kBytes < (int64_t{64} << 20)) return absl::ResourceExhaustedError("too little free GPU memory to measure bandwidth");
  ASSIGN_OR_RETURN(KernelHandle k, LoadProbe(device, "read_bandwidth.cu", "read_bandwidth"));
  ASSIGN_OR_RETURN(const int per_sm, device.MaxActiveBlocksPerSm(k, kProbeThreads, 0));
  const unsigned grid = static_cast<unsigned>(std::max(1, per_sm) * device.properties().sm_count);
  ASSIGN_OR_RETURN(Buffer src, Buffer::Allocate(device, kBytes, "the bandwidth probe"));
  ASSIGN_OR_RETURN(Buffer out, Buffer::Allocate(device, grid * 4, "the bandwidth probe"));
  RETURN_IF_ERROR(device.Fill(src.get(), 0x5A, kBytes));
  ASSIGN_OR_RETURN(EventHandle a, device.CreateEvent());
  ASSIGN_OR_RETURN(EventHandle b, device.CreateEvent());
  ReadBandwidthArgs args{src.get(), static_cast<unsigned long long>(kBytes / 16), static_cast<unsigned*>(out.get())};
  double best_ms = 0;
  for (int rep = 0; rep < 11; ++rep) {
    RETURN_IF_ERROR(device.Record(a));
    RETURN_IF_ERROR(device.Launch(k, {grid, 1, 1}, {kProbeThreads, 1, 1}, 0, &args, sizeof(args)));
    RETURN_IF_ERROR(device.Record(b));
    RETURN_IF_ERROR(device.Synchronize("the bandwidth probe"));
    ASSIGN_OR_RETURN(const float ms, device.ElapsedMs(a, b));
    if (rep > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;  // rep 0 warms up
  }
  return static_cast<double>(kBytes) / (best_ms * 1e6);
}

absl::StatusOr<ProbeTable> MeasureL2Prefetch(DeviceApi& device, const L2ProbeOptions& options) {
  const DeviceProperties& props = device.properties();
  std::vector<int64_t> sizes = options.sizes;
  if (sizes.empty()) {
    for (int64_t mib : {4, 16, 32}) {
      const int64_t bytes = mib << 20;
      if (props.l2_bytes == 0 || bytes <= props.l2_bytes / 4 * 3) sizes.push_back(bytes);
    }
  }
  for (int64_t s : sizes) {
    if (s <= 0 || s % 256 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("L2 probe: a buffer of ", s, " bytes; sizes must be positive multiples of 256"));
    }
  }
  if (sizes.empty()) return absl::FailedPreconditionError("L2 probe: this device's L2 holds none of the probe's buffers");
  if (options.reps < 1) return absl::InvalidArgumentError("L2 probe: reps must be at least 1");
  if (options.settle_ns < 0) return absl::InvalidArgumentError("L2 probe: settle_ns must not be negative");
  const int64_t flush_bytes = options.flush_bytes > 0 ? options.flush_bytes / 4096 * 4096
                                                      : std::max<int64_t>(int64_t{64} << 20, props.l2_bytes * 4);
  ASSIGN_OR_RETURN(KernelHandle read, LoadProbe(device, "read_bandwidth.cu", "read_bandwidth"));
  ASSIGN_OR_RETURN(KernelHandle prefetch, LoadProbe(device, "l2_prefetch_probe.cu", "l2_prefetch_probe"));
  ASSIGN_OR_RETURN(const int per_sm, device.MaxActiveBlocksPerSm(read, kProbeThreads, 0));
  const unsigned read_grid = static_cast<unsigned>(std::max(1, per_sm) * std::max(1, props.sm_count));
  // One prefetching CTA an SM, as a latency-bound kernel that prefetches for its successor has.
  const unsigned prefetch_grid = static_cast<unsigned>(std::max(1, props.sm_count));
  const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  ASSIGN_OR_RETURN(Buffer src, Buffer::Allocate(device, largest, "the L2 probe"));
  ASSIGN_OR_RETURN(Buffer flush, Buffer::Allocate(device, flush_bytes, "the L2 probe"));
  ASSIGN_OR_RETURN(Buffer out, Buffer::Allocate(device, int64_t{4} * std::max(read_grid, prefetch_grid), "the L2 probe"));
  RETURN_IF_ERROR(device.Fill(src.get(), 0x5A, largest));
  RETURN_IF_ERROR(device.Fill(flush.get(), 0xA5, flush_bytes));
  std::vector<EventHandle> ev(3);
  for (EventHandle& e : ev) {
    ASSIGN_OR_RETURN(e, device.CreateEvent());
  }
  unsigned* out_words = static_cast<unsigned*>(out.get());
  auto read_all = [&](const void* p, int64_t bytes) {
    const ReadBandwidthArgs a{p, static_cast<unsigned long long>(bytes / 16), out_words};
    return device.Launch(read, {read_grid, 1, 1}, {kProbeThreads, 1, 1}, 0, &a, sizeof(a));
  };

  struct Form {
    std::string label;
    int form;  // an L2PrefetchForm; -1: no prefetch (the kernel runs, asking nothing)
    unsigned chunk;
  };
  std::vector<Form> forms = {{"none (cold)", -1, 0},
                             {"ld.global.nc every 16 B (warm)", kL2PrefetchLoad, 0},
                             {"prefetch.global.L2 per 128 B", kL2PrefetchLine, 0},
                             {"prefetch.global.L2::evict_last per 128 B", kL2PrefetchLineEvictLast, 0},
                             {"ld.global.nc.L2::256B 4 B per 256 B", kL2PrefetchLoad256, 0}};
  if (props.tensor_copies) {  // sm_90: the bulk prefetch exists where tensor maps do
    for (unsigned chunk : {4u << 10, 64u << 10, 1u << 20}) {
      forms.push_back({absl::StrCat("cp.async.bulk.prefetch.L2 ", chunk >> 10, " KiB"), kL2PrefetchBulk, chunk});
    }
  }

  ProbeTable table;
  table.title = absl::StrFormat(
      "L2 prefetch probe: a buffer evicted (%d MiB read), prefetched by %u CTAs, then read by "
      "%u CTAs right after (next) or %.0f us after (settled); medians of %d; share = (cold - t) / (cold - warm)",
      static_cast<int>(flush_bytes >> 20), prefetch_grid, read_grid, options.settle_ns / 1e3, options.reps);
  table.columns = {"form", "MiB", "prefetch us", "read us (next)", "read us (settled)", "share (next)",
                   "share (settled)"};
  for (int64_t bytes : sizes) {
    const size_t first_row = table.rows.size();
    for (const Form& f : forms) {
      auto run_prefetch = [&](unsigned long long spin_ns) {
        const L2PrefetchProbeArgs pa{src.get(), static_cast<unsigned long long>(bytes), f.chunk, f.form, spin_ns,
                                     out_words};
        return device.Launch(prefetch, {prefetch_grid, 1, 1}, {kProbeThreads, 1, 1}, 0, &pa, sizeof(pa));
      };
      std::vector<double> prefetch_us, next_us, settled_us;
      for (int rep = 0; rep < options.reps; ++rep) {
        // Next: the read launched right behind the prefetch, as a kernel's successor is.
        RETURN_IF_ERROR(read_all(flush.get(), flush_bytes));
        RETURN_IF_ERROR(device.Record(ev[0]));
        RETURN_IF_ERROR(run_prefetch(0));
        RETURN_IF_ERROR(device.Record(ev[1]));
        RETURN_IF_ERROR(read_all(src.get(), bytes));
        RETURN_IF_ERROR(device.Record(ev[2]));
        RETURN_IF_ERROR(device.Synchronize("the L2 probe"));
        ASSIGN_OR_RETURN(const float p_ms, device.ElapsedMs(ev[0], ev[1]));
        ASSIGN_OR_RETURN(const float n_ms, device.ElapsedMs(ev[1], ev[2]));
        prefetch_us.push_back(p_ms * 1e3);
        next_us.push_back(n_ms * 1e3);
        // Settled: the prefetch kernel held open, so its prefetches had settle_ns to land.
        RETURN_IF_ERROR(read_all(flush.get(), flush_bytes));
        RETURN_IF_ERROR(run_prefetch(static_cast<unsigned long long>(options.settle_ns)));
        RETURN_IF_ERROR(device.Record(ev[0]));
        RETURN_IF_ERROR(read_all(src.get(), bytes));
        RETURN_IF_ERROR(device.Record(ev[1]));
        RETURN_IF_ERROR(device.Synchronize("the L2 probe"));
        ASSIGN_OR_RETURN(const float s_ms, device.ElapsedMs(ev[0], ev[1]));
        settled_us.push_back(s_ms * 1e3);
      }
      table.rows.push_back({f.label,
                            {static_cast<double>(bytes) / (1 << 20), Median(prefetch_us), Median(next_us),
                             Median(settled_us), 0, 0}});
    }
    // Shares against this size's cold (row 0) and warm (row 1) reads.
    for (size_t r = first_row; r < table.rows.size(); ++r) {
      for (int col : {2, 3}) {
        const double cold = table.rows[first_row].values[col], warm = table.rows[first_row + 1].values[col];
        const double gain = cold - warm;
        table.rows[r].values[col + 2] = gain > 0 ? (cold - table.rows[r].values[col]) / gain : 0;
      }
    }
  }
  return table;
}

}  // namespace jllm::cuda
