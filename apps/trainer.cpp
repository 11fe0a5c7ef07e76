#include "apps/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/progress_bar.h"
#include "apps/training_plot.h"
#include "core/error.h"
#include "layers/models.h"

namespace engine::apps {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

data::TransformConfig train_transform(const TrainConfig& c, const TrainData& d, std::uint64_t seed) {
  if (c.augment == "crop-flip") return data::TransformConfig::train(d.mean, d.std, seed);
  data::TransformConfig t = data::TransformConfig::eval(d.mean, d.std);
  t.seed = seed;
  return t;
}

// Each rank draws its own dropout masks, rank 0 those of a single process: one seed on every rank would
// drop the same units for every rank's samples. Derived from the run's seed, so --resume restores them.
std::uint64_t rank_dropout_seed(std::uint64_t seed, int rank) {
  return rank == 0 ? seed : seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank));
}

void print_line(const std::string& line) {
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

}  // namespace

Trainer::Trainer(TrainConfig config, TrainerHooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)), train_loss_(config_.label_smoothing) {
  const TrainConfig& c = config_;
  seed_ = c.seed;
  device_ = std::make_unique<TrainDevice>(c.cpu, c.device_index, c.deterministic,
                                          rank_dropout_seed(c.seed, c.rank));
  if (device_->fell_back_to_cpu() && c.is_main()) print_line("cnn_train: no GPU found: training on the CPU");
  if (!c.plot.empty()) {
    ENGINE_CHECK(!find_gnuplot().empty(), "--plot {}: gnuplot is not installed (Debian package gnuplot-nox)",
                 c.plot);
  }
  const bool eval_only = !c.eval_only.empty();
  data_ = eval_only ? load_test_data(c) : load_train_data(c);
  const data::Dataset& shape_source = data_.test;
  std::string model_name = c.model;
  if (!c.model_given && (eval_only || !c.resume.empty())) {
    // The checkpoint says which model it holds; a checkpoint without that (PyTorch's) keeps the default.
    const optim::SafetensorsFile file = optim::SafetensorsFile::read(eval_only ? c.eval_only : c.resume);
    if (const auto it = file.metadata().find("model"); it != file.metadata().end()) model_name = it->second;
  }
  model_ = std::make_unique<layers::Model>(layers::build_model(
      model_name, static_cast<int>(shape_source.channels), static_cast<int>(shape_source.num_classes()),
      static_cast<int>(shape_source.height), static_cast<int>(shape_source.width), hooks_.make_batchnorm));
  model_->finalize(device_->context(), c.seed);
  sgd_ = std::make_unique<optim::Sgd>(
      *model_,
      optim::SgdConfig{.momentum = c.momentum, .weight_decay = c.weight_decay, .nesterov = c.nesterov});
  schedule_ = std::make_unique<optim::LrSchedule>(c.schedule_config());

  const std::string checkpoint = eval_only ? c.eval_only : c.resume;
  if (!checkpoint.empty()) {
    const optim::LoadedCheckpoint loaded =
        optim::load_checkpoint(checkpoint, *model_, eval_only ? nullptr : sgd_.get());
    if (!eval_only && loaded.has_training_state) {
      start_epoch_ = loaded.state.epoch;
      seed_ = loaded.state.seed;
      model_->context().dropout_seed = rank_dropout_seed(seed_, c.rank);
      model_->context().dropout_offset = loaded.state.dropout_offset;
      if (seed_ != c.seed && c.is_main()) {
        print_line(fmt::format("cnn_train: continuing with the checkpoint's seed {} (not --seed {})", seed_,
                               c.seed));
      }
    }
  }

  if (hooks_.data_parallel) data_parallel_ = hooks_.data_parallel(*model_);
  ENGINE_CHECK(
      c.accumulate == 1 || data_parallel_ != nullptr,
      "--accumulate {}: the Trainer needs a DataParallel to accumulate gradients (a bug in the caller)",
      c.accumulate);

  const Device device = device_->context().device;
  void* stream = device_->context().stream;
  data::LoaderOptions test_options;
  test_options.batch_size = c.batch_size;
  test_options.drop_last = false;
  test_options.device = device;
  test_options.gpu_resident = device.is_cuda() && c.gpu_resident_data;
  test_options.stream = stream;
  test_options.transform = data::TransformConfig::eval(data_.mean, data_.std);
  test_loader_ = std::make_unique<data::Loader>(
      data_.test, data::DistributedSampler::eval_no_pad(data_.test.size(), c.world_size, c.rank),
      test_options);
  if (!eval_only) {
    data::LoaderOptions train_options = test_options;
    train_options.transform = train_transform(c, data_, seed_);
    train_loader_ = std::make_unique<data::Loader>(
        data_.train, data::DistributedSampler(data_.train.size(), c.world_size, c.rank, true, seed_),
        train_options);
    if (device.is_cuda()) step_losses_ = Tensor::empty_pinned({train_loader_->num_batches()}, DType::F32);
    if (c.is_main() && !c.checkpoint_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(c.checkpoint_dir, ec);
      ENGINE_CHECK(!ec && std::filesystem::is_directory(c.checkpoint_dir),
                   "--checkpoint-dir '{}': cannot create the folder: {}", c.checkpoint_dir, ec.message());
    }
  }
  accumulators_ = Tensor::zeros({16}, DType::U8, device, stream);
  if (c.is_main()) {
    print_line(fmt::format("cnn_train: {} | model {} ({} parameters) | {} | seed {}", data_.description,
                           model_name, with_thousands(model_->parameter_count()), device.str(), seed_));
  }
}

Trainer::~Trainer() = default;

EpochTotals Trainer::read_totals(std::int64_t samples) {
  const Tensor host = accumulators_.to(Device::cpu(), device_->context().stream);
  EpochTotals t;
  std::memcpy(&t.loss_sum, host.data<std::uint8_t>(), 8);
  std::memcpy(&t.correct, host.data<std::uint8_t>() + 8, 8);
  t.samples = samples;
  return t;
}

void Trainer::check_losses(std::int64_t epoch, std::int64_t steps) {
  if (!step_losses_.defined()) return;
  const float* losses = step_losses_.data<float>();
  for (std::int64_t s = 0; s < steps; ++s) {
    if (!std::isfinite(losses[s])) {
      throw NonFiniteLoss(fmt::format("the training loss is {} at epoch {}, step {} (of {}); stopping",
                                      losses[s], epoch + 1, s + 1, steps));
    }
  }
}

EpochTotals Trainer::train_epoch(std::int64_t epoch, EpochMetrics& m) {
  const double lr = schedule_->lr(epoch);
  void* stream = device_->context().stream;
  accumulators_.fill_bytes(0, stream);
  const layers::LossAccumulators acc{reinterpret_cast<double*>(accumulators_.data<std::uint8_t>()),
                                     reinterpret_cast<std::int64_t*>(accumulators_.data<std::uint8_t>() + 8)};
  train_loader_->start_epoch(static_cast<std::uint64_t>(epoch));  // the sampler's and augmentation's epoch
  const std::int64_t batches = train_loader_->num_batches();
  ProgressBar bar(batches, config_.is_main());
  std::int64_t steps = 0, samples = 0;
  for (data::Batch batch; train_loader_->next(batch);) {
    // --accumulate K: batches [g, g + K) make one optimizer step (the epoch's last group may be shorter),
    // each contributing 1/size of its loss gradient, so the step sees their mean.
    const std::int64_t group_start = steps - steps % config_.accumulate;
    const std::int64_t group_size = std::min(config_.accumulate, batches - group_start);
    const bool ends_step = steps - group_start == group_size - 1;
    const Tensor logits = model_->forward(batch.images, layers::Mode::Train);
    const Tensor loss = train_loss_.forward(model_->context(), logits, batch.labels, acc);
    if (loss.device().is_cpu()) {
      const float value = loss.data<float>()[0];
      if (!std::isfinite(value)) {
        bar.clear();
        throw NonFiniteLoss(fmt::format("the training loss is {} at epoch {}, step {} (of {}); stopping",
                                        value, epoch + 1, steps + 1, train_loader_->num_batches()));
      }
    } else {
      step_losses_.flat_range(steps, {1}).copy_from(loss, stream);  // queued; checked once per epoch
    }
    if (data_parallel_) data_parallel_->before_backward(ends_step);
    model_->backward(train_loss_.backward(1.0 / static_cast<double>(group_size)));
    if (data_parallel_) data_parallel_->after_backward();
    if (ends_step) sgd_->step(lr);
    ++steps;
    samples += batch.size();
    bar.update(steps);
  }
  device_->synchronize();
  bar.clear();
  check_losses(epoch, steps);
  m.epoch = epoch + 1;
  m.lr = lr;
  m.steps = steps;
  m.batch_size = config_.batch_size;
  m.world_size = config_.world_size;
  return read_totals(samples);
}

EpochTotals Trainer::evaluate(std::int64_t epochs_done) {
  if (data_parallel_) data_parallel_->before_evaluate(epochs_done);
  void* stream = device_->context().stream;
  accumulators_.fill_bytes(0, stream);
  const layers::LossAccumulators acc{reinterpret_cast<double*>(accumulators_.data<std::uint8_t>()),
                                     reinterpret_cast<std::int64_t*>(accumulators_.data<std::uint8_t>() + 8)};
  test_loader_->start_epoch(0);
  std::int64_t samples = 0;
  for (data::Batch batch; test_loader_->next(batch);) {
    // Inference: no layer keeps its input for a backward, and the loss computes no gradient.
    const Tensor logits = model_->forward(batch.images, layers::Mode::Inference);
    test_loss_.evaluate(model_->context(), logits, batch.labels, acc);
    samples += batch.size();
  }
  device_->synchronize();
  return read_totals(samples);
}

void Trainer::save(std::int64_t epochs_done) {
  optim::TrainingState state;
  state.epoch = epochs_done;
  state.step = sgd_->steps();
  state.seed = seed_;
  state.dropout_offset = model_->context().dropout_offset;
  state.sampler_seed = seed_;
  state.sampler_epoch = static_cast<std::uint64_t>(epochs_done);
  // What cnn_predict needs to rebuild the input (apps/predict.h), and what the run was.
  state.extra = {{"dataset", config_.dataset},
                 {"channels", std::to_string(data_.test.channels)},
                 {"height", std::to_string(data_.test.height)},
                 {"width", std::to_string(data_.test.width)},
                 {"class_names", fmt::format("{}", fmt::join(data_.test.class_names, ","))},
                 {"mean", fmt::format("{}", fmt::join(data_.mean, ","))},
                 {"std", fmt::format("{}", fmt::join(data_.std, ","))},
                 {"batch_size", std::to_string(config_.batch_size)},
                 {"lr", fmt::format("{}", config_.lr)},
                 {"schedule", config_.schedule}};
  const std::filesystem::path dir(config_.checkpoint_dir);
  const std::string epoch_file = (dir / fmt::format("epoch{}.safetensors", epochs_done)).string();
  optim::save_checkpoint(epoch_file, *model_, sgd_.get(), state);
  optim::save_checkpoint((dir / "last.safetensors").string(), *model_, sgd_.get(), state);
  print_line(fmt::format("cnn_train: saved {}", epoch_file));
}

double Trainer::run() {
  const TrainConfig& c = config_;
  if (!c.eval_only.empty()) {
    const auto start = Clock::now();
    EpochTotals test = evaluate(start_epoch_);
    EpochTotals none;
    if (data_parallel_) data_parallel_->reduce_totals(none, test);
    const double n = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
    const double acc = 100.0 * static_cast<double>(test.correct) / n;
    if (c.is_main()) {
      print_line(fmt::format("{} Eval | Samples: {} | Test Loss: {:.4f} | Test Acc: {:.2f}% | Time: {:.2f}s",
                             device_->label(), with_thousands(test.samples), test.loss_sum / n, acc,
                             seconds_since(start)));
      print_line(fmt::format("Test Acc: {:.2f}%", acc));
    }
    return acc;
  }
  std::ofstream metrics;
  if (c.is_main() && !c.metrics.empty()) {
    metrics.open(c.metrics, c.resume.empty() ? std::ios::trunc : std::ios::app);
    ENGINE_CHECK(metrics.good(), "--metrics '{}': cannot write the file", c.metrics);
  }
  double last_acc = 0.0;
  if (start_epoch_ >= c.epochs && c.is_main()) {
    print_line(fmt::format("cnn_train: the checkpoint has {} epochs done, --epochs is {}: nothing to train",
                           start_epoch_, c.epochs));
  }
  for (std::int64_t epoch = start_epoch_; epoch < c.epochs; ++epoch) {
    device_->reset_peak_memory();
    const auto start = Clock::now();
    EpochMetrics m;
    EpochTotals train = train_epoch(epoch, m);
    m.seconds = seconds_since(start);
    EpochTotals test = evaluate(epoch + 1);
    if (data_parallel_) data_parallel_->reduce_totals(train, test);
    const double n = static_cast<double>(std::max<std::int64_t>(train.samples, 1));
    m.train_loss = train.loss_sum / n;
    m.train_acc = 100.0 * static_cast<double>(train.correct) / n;
    m.images_per_second = static_cast<double>(train.samples) / std::max(m.seconds, 1e-9);
    const double tn = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
    m.test_loss = test.loss_sum / tn;
    m.test_acc = 100.0 * static_cast<double>(test.correct) / tn;
    m.memory_mb = static_cast<double>(device_->peak_memory_bytes()) / (1024.0 * 1024.0);
    last_acc = m.test_acc;
    history_.push_back(m);
    if (c.is_main() || c.log_all_ranks) print_line(format_epoch_line(device_->label(), m));
    if (!c.is_main()) continue;
    if (metrics.is_open()) {
      metrics << format_metrics_json(m) << '\n';
      metrics.flush();
    }
    const std::int64_t done = epoch + 1;
    if (!c.checkpoint_dir.empty() && ((c.save_every > 0 && done % c.save_every == 0) || done == c.epochs)) {
      save(done);
    }
    if (!c.plot.empty())
      write_training_plot(history_, c.plot, fmt::format("{} on {}", model_->name(), c.dataset));
  }
  if (history_.empty()) {  // a resumed run that was already complete: report its accuracy
    EpochTotals test = evaluate(start_epoch_);
    EpochTotals none;
    if (data_parallel_) data_parallel_->reduce_totals(none, test);
    last_acc = 100.0 * static_cast<double>(test.correct) /
               static_cast<double>(std::max<std::int64_t>(test.samples, 1));
  }
  if (c.is_main()) print_line(fmt::format("Test Acc: {:.2f}%", last_acc));
  return last_acc;
}

}  // namespace engine::apps
