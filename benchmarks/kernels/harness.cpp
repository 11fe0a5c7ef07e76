#include "benchmarks/kernels/harness.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace engine::bench {

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::Memory: return "memory";
    case Bound::Fp32: return "fp32";
    case Bound::Tf32: return "tf32";
    case Bound::Bf16: return "bf16";
  }
  return "?";
}

double Ceilings::of(Bound b) const {
  switch (b) {
    case Bound::Memory: return copy_gb_s;
    case Bound::Fp32: return fp32_tflop_s;
    case Bound::Tf32: return tf32_tflop_s;
    case Bound::Bf16: return bf16_tflop_s;
  }
  return 0;
}

std::string Check::str() const {
  if (where.empty()) return "-";
  return fmt::format("{} {:.1e} @{}", ok ? "ok" : "FAIL", rel_l2, where);
}

Check compare(const std::vector<float>& got, const std::vector<double>& ref, double tolerance,
              std::string where) {
  Check c;
  c.tolerance = tolerance;
  c.where = std::move(where);
  if (got.size() != ref.size() || got.empty()) return c;  // rel_l2 NaN, not ok
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if (!std::isfinite(g)) return c;
    diff += (g - ref[i]) * (g - ref[i]);
    norm += ref[i] * ref[i];
  }
  c.rel_l2 = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  c.ok = c.rel_l2 <= tolerance;
  return c;
}

Check worst(const std::vector<Check>& checks) {
  if (checks.empty()) return {};
  Check w = checks.front();
  for (const Check& c : checks) {
    const bool worse_status = w.ok && !c.ok;
    const bool same_status_larger = w.ok == c.ok && (std::isnan(c.rel_l2) || c.rel_l2 > w.rel_l2);
    if (worse_status || same_status_larger) w = c;
  }
  return w;
}

double Row::rate() const {
  if (!(median_ms > 0)) return kNaN;
  const double seconds = median_ms * 1e-3;
  return bound == Bound::Memory ? bytes / seconds / 1e9 : flops / seconds / 1e12;
}

double Row::share(const Ceilings& c) const {
  const double ceiling = c.of(bound);
  const double r = rate();
  return ceiling > 0 && r > 0 ? r / ceiling : kNaN;
}

double median(std::vector<double> values) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<float> random_floats(std::int64_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (float& x : v) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    x = lo + (hi - lo) * u;
  }
  return v;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

bool Report::wants(const std::string& family) const {
  return options_.filter.empty() || family.find(options_.filter) != std::string::npos;
}

void Report::add(Row row) {
  const double r = row.rate(), s = row.share(ceilings_);
  if (!std::isnan(row.median_ms))  // progress while the GPU runs; the smoke run only prints the table
    std::printf("  %-21s %-26s %-44s %9.4f ms  %8.1f %-7s %5.1f%%  %s\n", row.family.c_str(),
                row.name.c_str(), row.shape.c_str(), row.median_ms, r,
                row.bound == Bound::Memory ? "GB/s" : "TFLOP/s", 100 * s, row.check.str().c_str());
  std::fflush(stdout);
  rows_.push_back(std::move(row));
}

int Report::failures() const {
  return static_cast<int>(
      std::count_if(rows_.begin(), rows_.end(), [](const Row& r) { return !r.check.ok; }));
}

void Report::print_table(std::FILE* out) const {
  const Ceilings& c = ceilings_;
  std::fprintf(out, "\nkernel_bench on %s\n", c.device.empty() ? "(no GPU)" : c.device.c_str());
  std::fprintf(out,
               "ceilings measured in this run: copy %.0f GB/s, fp32 %.1f, tf32 %.1f, bf16 %.1f TFLOP/s\n",
               c.copy_gb_s, c.fp32_tflop_s, c.tf32_tflop_s, c.bf16_tflop_s);
  std::fprintf(out, "%-21s %-26s %-44s %6s %10s %10s %10s %9s %6s  %s\n", "family", "kernel", "shape",
               "bound", "MB", "GFLOP", "median ms", "rate", "share", "check vs CPU (rel L2 @size)");
  for (const Row& r : rows_) {
    const double rate = r.rate(), share = r.share(c);
    const std::string rate_s = std::isnan(rate) ? "-" : fmt::format("{:.1f}", rate);
    const std::string share_s = std::isnan(share) ? "-" : fmt::format("{:.0f}%", 100 * share);
    const std::string ms = std::isnan(r.median_ms) ? "skipped" : fmt::format("{:.4f}", r.median_ms);
    std::fprintf(out, "%-21s %-26s %-44s %6s %10.2f %10.3f %10s %9s %6s  %s\n", r.family.c_str(),
                 r.name.c_str(), r.shape.c_str(), bound_name(r.bound), r.bytes / 1e6, r.flops / 1e9,
                 ms.c_str(), rate_s.c_str(), share_s.c_str(), r.check.str().c_str());
  }
  std::fprintf(out, "rate: GB/s for memory-bound rows, TFLOP/s otherwise; share: of the matching ceiling.\n");
}

void Report::write_json(const std::string& path) const {
  using nlohmann::json;
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json rows = json::array();
  for (const Row& r : rows_) {
    rows.push_back({{"family", r.family},
                    {"kernel", r.name},
                    {"shape", r.shape},
                    {"bound", bound_name(r.bound)},
                    {"bytes", r.bytes},
                    {"flops", r.flops},
                    {"median_ms", num(r.median_ms)},
                    {"min_ms", num(r.min_ms)},
                    {"rate", num(r.rate())},
                    {"share", num(r.share(ceilings_))},
                    {"check_rel_l2", num(r.check.rel_l2)},
                    {"check_ok", r.check.ok},
                    {"check_at", r.check.where}});
  }
  const json doc = {{"device", ceilings_.device},
                    {"smoke", options_.smoke},
                    {"repeats", options_.repeats},
                    {"ceilings",
                     {{"copy_gb_s", ceilings_.copy_gb_s},
                      {"fp32_tflop_s", ceilings_.fp32_tflop_s},
                      {"tf32_tflop_s", ceilings_.tf32_tflop_s},
                      {"bf16_tflop_s", ceilings_.bf16_tflop_s}}},
                    {"rows", rows}};
  std::ofstream f(path);
  ENGINE_CHECK(f.good(), "kernel_bench: cannot write {}", path);
  f << doc.dump(1) << "\n";
  ENGINE_CHECK(f.good(), "kernel_bench: writing {} failed", path);
}

std::string dims(std::initializer_list<std::int64_t> d) {
  std::string s = "[";
  for (std::int64_t v : d) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
  return s + "]";
}

}  // namespace engine::bench
