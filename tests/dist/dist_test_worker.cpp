// dist_test_worker: one rank of the DDP tests (tests/dist/dist_test.cpp starts it through the launcher or
// with torchrun-style variables). It reads its rank from the environment like any trainer, and writes what
// the test checks to out=<dir>/rank<r>.bin as float64s: [allreduce_count, gradient count, gradients...,
// parameters...].
//
//   dist_test_worker grads    model=plain|syncbn out=DIR [batch=4] [accum=1] [bf16=0] [dtype=f64|f32]
//                             [first_kb=0.5] [bucket_kb=1]
//   dist_test_worker train    model=... out=DIR steps=N          SGD steps; parameters written at the end
//   dist_test_worker kill     victim=R kill_step=S               trains; rank R kills itself (SIGKILL) at
//   step S dist_test_worker mismatch                                     rank 1 builds a different model
//   dist_test_worker eval     out=DIR n=10000                     distributed evaluation over EvalNoPad
//   shares
// Any engine::Error is printed and ends the process with status 1.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <signal.h>
#include <string>
#include <vector>

#include "data/distributed_sampler.h"
#include "dist/bootstrap.h"
#include "dist/metrics.h"
#include "dist/model_sync.h"
#include "dist/reducer.h"
#include "kernels/cpu/sgd.h"
#include "layers/softmax_cross_entropy.h"
#include "tests/dist/dist_test_models.h"

namespace {

using namespace engine;
using namespace engine::dist;

std::map<std::string, std::string> parse_args(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    ENGINE_CHECK(eq != std::string::npos, "argument '{}' is not key=value", a);
    args[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return args;
}

std::string arg(const std::map<std::string, std::string>& args, const std::string& key,
                const std::string& def) {
  const auto it = args.find(key);
  return it == args.end() ? def : it->second;
}

void write_doubles(const std::string& path, const std::vector<double>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(double)));
  ENGINE_CHECK(f.good(), "cannot write {}", path);
}

int run(const std::string& mode, const std::map<std::string, std::string>& args) {
  const DistEnv env = read_dist_env();
  const auto timeout = std::chrono::milliseconds(std::stol(arg(args, "timeout_ms", "20000")));
  std::unique_ptr<ProcessGroup> pg = init_process_group(env, Backend::Gloo, timeout);
  const std::string out = arg(args, "out", "");

  if (mode == "eval") {
    layers::Model model = testing::build_test_model("plain", pg.get());
    const std::int64_t n = std::stol(arg(args, "n", "10000"));
    const data::DistributedSampler sampler =
        data::DistributedSampler::eval_no_pad(n, pg->world_size(), pg->rank());
    const std::vector<std::int64_t> idx = sampler.indices();
    layers::SoftmaxCrossEntropy loss;
    EvalTotals local;
    const std::int64_t per = testing::kChannels * testing::kSize * testing::kSize;
    for (std::size_t b = 0; b < idx.size(); b += 256) {
      const auto count = static_cast<std::int64_t>(std::min<std::size_t>(256, idx.size() - b));
      Tensor x = Tensor::empty({count, testing::kChannels, testing::kSize, testing::kSize}, DType::F64);
      Tensor labels = Tensor::empty({count}, DType::I32);
      for (std::int64_t j = 0; j < count; ++j) {
        const std::int64_t i = idx[b + static_cast<std::size_t>(j)];
        std::memcpy(x.data<double>() + j * per, testing::make_inputs(i, 1, 7).data<double>(),
                    per * sizeof(double));
        labels.data<std::int32_t>()[j] = testing::make_labels(i, 1, 7).data<std::int32_t>()[0];
      }
      loss.forward(model.context(), model.forward(x, layers::Mode::Eval), labels,
                   {&local.loss_sum, &local.correct});
      local.count += count;
    }
    const EvalTotals total = all_reduce_totals(*pg, local);
    if (pg->rank() == 0) {
      write_doubles(out + "/eval.bin",
                    {total.loss_sum, static_cast<double>(total.correct), static_cast<double>(total.count)});
    }
    return 0;
  }

  const std::string kind = mode == "mismatch" && pg->rank() == 1 ? "wide" : arg(args, "model", "plain");
  const DType dtype = arg(args, "dtype", "f64") == "f32" ? DType::F32 : DType::F64;
  layers::Model model = testing::build_test_model(kind, pg.get(), dtype);
  verify_same_model(*pg, model);
  broadcast_parameters(*pg, model);
  ReducerOptions ro;
  ro.first_bucket_mb = std::stod(arg(args, "first_kb", "0.5")) / 1024.0;
  ro.bucket_mb = std::stod(arg(args, "bucket_kb", "1")) / 1024.0;
  if (arg(args, "bf16", "0") == "1") ro.compression = GradCompression::Bf16;
  Reducer reducer(*pg, model, ro);

  const std::int64_t batch = std::stol(arg(args, "batch", "4"));
  const int accum = std::stoi(arg(args, "accum", "1"));
  const int steps = mode == "kill" || mode == "stop" ? 100000 : std::stoi(arg(args, "steps", "1"));
  const int victim = std::stoi(arg(args, "victim", "-1"));
  const int kill_step = std::stoi(arg(args, "kill_step", "-1"));
  layers::SoftmaxCrossEntropy loss;
  Tensor momentum = Tensor::zeros(model.flat_parameters().shape(), DType::F64);
  const cpu::SgdOptions sgd{.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  for (int step = 0; step < steps; ++step) {
    if (step == kill_step && pg->rank() == victim) ::raise(mode == "stop" ? SIGSTOP : SIGKILL);
    for (int k = 0; k < accum; ++k) {
      reducer.set_sync(k == accum - 1);
      const auto seed = static_cast<std::uint64_t>(100 + step * accum + k);
      const Tensor x = testing::in_dtype(testing::make_inputs(pg->rank() * batch, batch, seed), dtype);
      const Tensor labels = testing::make_labels(pg->rank() * batch, batch, seed);
      loss.forward(model.context(), model.forward(x, layers::Mode::Train), labels);
      model.backward(loss.backward());
      reducer.finish();
    }
    if ((mode == "train" || mode == "kill") && dtype == DType::F64) {
      cpu::sgd_step<double>(sgd, model.flat_parameters().data<double>(),
                            model.flat_gradients().data<double>(), momentum.data<double>(),
                            model.flat_parameters().numel(), step == 0);
    }
  }
  std::vector<double> result{static_cast<double>(reducer.allreduce_count()),
                             static_cast<double>(model.flat_gradients().numel())};
  for (double g : testing::values(model.flat_gradients())) result.push_back(g);
  for (double p : testing::values(model.flat_parameters())) result.push_back(p);
  if (!out.empty()) write_doubles(out + "/rank" + std::to_string(pg->rank()) + ".bin", result);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dist_test_worker grads|train|kill|mismatch|eval key=value...\n");
    return 2;
  }
  try {
    return run(argv[1], parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_test_worker: error: %s\n", e.what());
    return 1;
  }
}
