#pragma once
// kernel_bench's harness, the part every build has (no CUDA types): options, validation against the CPU
// reference, the median, the rows of the report and how they are printed (a table, and JSON).
//
// One row = one kernel on one shape. It says what it must move or do (bytes or FLOPs, counted from the
// shape: each input read once, each output written once), the median of the timed repeats, the rate that
// gives (GB/s or TFLOP/s) and that rate as a share of the ceiling measured in the same run (a
// device-to-device copy for bandwidth; a large cuBLAS GEMM in fp32, TF32 or bf16 for arithmetic). Before it
// is timed, every GPU kernel is run on a small version of the shape (the "check" column says which) and
// compared with the float64-accumulating CPU reference (kernels/cpu) by ||got - ref|| / ||ref||; NaN never
// passes. A failed check is reported in the row and makes kernel_bench exit non-zero.
//
// The CPU smoke path (kernel_bench --smoke, no GPU needed) runs the same validation code on tiny sizes with
// the CPU reference in float against itself in double, and fills the same rows with the same byte/FLOP
// bookkeeping, leaving the timing columns empty.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace engine::bench {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Options {
  bool smoke = false;     // CPU only: validation and bookkeeping on tiny sizes; no GPU timing
  std::string filter;     // run only the families whose name contains this
  int warmup = 3;         // untimed runs before the timed ones
  int repeats = 25;       // timed runs (the median is reported)
  bool fill_size = true;  // also time the one size per family that fills the GPU
  std::string json_path;  // also write the rows here as JSON
};

// What limits a kernel, and so which measured ceiling its rate is a share of.
enum class Bound { Memory, Fp32, Tf32, Bf16 };
const char* bound_name(Bound b);

// Ceilings measured in this run (0 = not measured).
struct Ceilings {
  std::string device;
  double copy_gb_s = 0;  // cudaMemcpy device to device, (read + write bytes) / time
  double fp32_tflop_s = 0, tf32_tflop_s = 0, bf16_tflop_s = 0;
  double of(Bound b) const;
};

// The result of comparing a kernel's output with the reference.
struct Check {
  double rel_l2 = kNaN;  // ||got - ref|| / ||ref|| (absolute ||got - ref|| when ref is all zeros)
  double tolerance = 0;
  bool ok = false;
  std::string where;  // the size it was checked at, e.g. "N=2" or "n=65536"
  std::string str() const;
};

// rel L2 of `got` against `ref`; any NaN/inf in got (or a size mismatch) fails.
Check compare(const std::vector<float>& got, const std::vector<double>& ref, double tolerance,
              std::string where);
// Combines several outputs' checks (forward y and backward dx, dw, ...): the worst one.
Check worst(const std::vector<Check>& checks);

struct Row {
  std::string family;  // "relu"
  std::string name;    // "forward", "cudnn backward", ...
  std::string shape;   // "[128, 64, 32, 32]" and the model it comes from
  Bound bound = Bound::Memory;
  double bytes = 0;  // fewest bytes it must move
  double flops = 0;  // FLOPs it must do (0 for memory-bound rows)
  double median_ms = kNaN, min_ms = kNaN;
  Check check;
  double rate() const;                    // GB/s (Memory) or TFLOP/s, from the median; NaN when not timed
  double share(const Ceilings& c) const;  // rate / ceiling; NaN when either is missing
};

double median(std::vector<double> values);  // NaN for an empty list

// Deterministic inputs (splitmix64): uniform in [lo, hi). Never all zeros.
std::vector<float> random_floats(std::int64_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);
std::vector<double> to_double(const std::vector<float>& v);

class Report {
 public:
  explicit Report(const Options& options) : options_(options) {}
  const Options& options() const { return options_; }
  bool wants(const std::string& family) const;  // the --filter test

  void set_ceilings(const Ceilings& c) { ceilings_ = c; }
  const Ceilings& ceilings() const { return ceilings_; }
  void add(Row row);
  const std::vector<Row>& rows() const { return rows_; }
  int failures() const;

  void print_table(std::FILE* out) const;
  void write_json(const std::string& path) const;  // throws engine::Error when it cannot

 private:
  Options options_;
  Ceilings ceilings_;
  std::vector<Row> rows_;
};

// Shape as text: "[128, 64, 32, 32]".
std::string dims(std::initializer_list<std::int64_t> d);

}  // namespace engine::bench
