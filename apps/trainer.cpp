#include "apps/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/checkpoint_lock.h"
#include "apps/checkpoint_match.h"
#include "apps/cuda_graph_policy.h"
#include "apps/progress_bar.h"
#include "apps/resume_auto.h"
#include "apps/step_state.h"
#include "apps/stop_signal.h"
#include "apps/training_plot.h"
#include "apps/whiten_init.h"
#include "core/error.h"
#include "layers/models.h"
#include "optim/param_groups.h"

namespace engine::apps {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

data::TransformConfig train_transform(const TrainConfig& c, const TrainData& d, std::uint64_t seed) {
  if (c.augment == Augment::CropFlip) return data::TransformConfig::train(d.mean, d.std, seed);
  if (c.augment == Augment::FlipTranslate)
    return data::TransformConfig::flip_translate(d.mean, d.std, seed, c.translate);
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

// A number of the checkpoint's metadata written by save_mid_epoch (absent: 0).
double metadata_number(const optim::TrainingState& state, const std::string& key) {
  const auto it = state.extra.find(key);
  return it == state.extra.end() ? 0.0 : std::stod(it->second);
}

}  // namespace

Trainer::Trainer(TrainConfig config, TrainerHooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)), train_loss_(config_.label_smoothing) {
  const TrainConfig& c = config_;
  seed_ = c.seed;
  device_ = std::make_unique<TrainDevice>(c.cpu, c.device_index, c.deterministic, c.precision,
                                          rank_dropout_seed(c.seed, c.rank));
  device_->set_layout(c.layout);
  if (device_->fell_back_to_cpu() && c.is_main()) print_line("cnn_train: no GPU found: training on the CPU");
  if (!c.plot.empty()) {
    ENGINE_CHECK(!find_gnuplot().empty(), "--plot {}: gnuplot is not installed (Debian package gnuplot-nox)",
                 c.plot);
  }
  const bool eval_only = !c.eval_only.empty();
  data_ = eval_only ? load_test_data(c) : load_train_data(c);
  const data::Dataset& shape_source = data_.test;
  // Rank 0 alone saves, and alone locks --checkpoint-dir (apps/checkpoint_lock.h): for --resume auto before
  // it reads the folder, else once the data, model and checkpoint are read (a run refused for bad input
  // leaves no folder), before the ranks' first collective.
  const bool saves = c.is_main() && !eval_only && !c.checkpoint_dir.empty();
  if (saves && c.resume_auto()) checkpoint_lock_ = std::make_unique<CheckpointDirLock>(c.checkpoint_dir);
  const std::string checkpoint = eval_only ? c.eval_only : resolve_resume();
  std::string model_name = c.model;
  if (!checkpoint.empty()) {
    const optim::SafetensorsFile file = optim::SafetensorsFile::read(checkpoint);
    check_checkpoint_fits_run(eval_only ? "--eval-only" : (c.resume_auto() ? "--resume auto" : "--resume"),
                              checkpoint, file.metadata(),
                              {c.dataset, c.model_given ? c.model : "", shape_source.class_names,
                               shape_source.channels, shape_source.height, shape_source.width, !eval_only});
    // The checkpoint says which model it holds; a checkpoint without that (PyTorch's) keeps the default.
    const auto it = file.metadata().find("model");
    if (!c.model_given && it != file.metadata().end()) model_name = it->second;
  }
  model_ = std::make_unique<layers::Model>(layers::build_model(
      model_name, static_cast<int>(shape_source.channels), static_cast<int>(shape_source.num_classes()),
      static_cast<int>(shape_source.height), static_cast<int>(shape_source.width), hooks_.make_batchnorm));
  model_->finalize(device_->context(), c.seed);
  if (c.whiten_init > 0 && !eval_only) {  // every rank alike, before the broadcast and a resume's weights
    const std::string note = apply_whiten_init(*model_, data_, c.whiten_init);
    if (c.is_main()) print_line(note);
  }
  for (const std::string& rule : c.param_groups)
    param_group_rules_.push_back(optim::parse_param_group_rule(rule));
  sgd_ = std::make_unique<optim::Sgd>(
      *model_,
      optim::SgdConfig{.momentum = c.momentum,
                       .weight_decay = c.weight_decay,
                       .nesterov = c.nesterov,
                       .groups = optim::param_groups_for(*model_, param_group_rules_, c.weight_decay)});
  if (c.ema_every > 0) {
    // Its start and total steps are set once the loader says how many steps an epoch has.
    ema_ = std::make_unique<optim::WeightAverage>(
        *model_, optim::EmaConfig{.every_steps = c.ema_every,
                                  .decay_base = c.ema_decay,
                                  .decay_pow = c.ema_decay_pow,
                                  .lookahead = c.ema_mode == EmaMode::Lookahead});
  }

  if (!checkpoint.empty()) {
    const optim::LoadedCheckpoint loaded =
        optim::load_checkpoint(checkpoint, *model_, eval_only ? nullptr : sgd_.get(), ema_.get());
    if (!eval_only) resumed_from_ = checkpoint;
    if (loaded.has_training_state && !loaded.checksum_verified && c.is_main())
      print_line("cnn_train: " + checkpoint +
                 " has no crc32 (written before checkpoints had one): "
                 "loaded without checking its bytes");
    if (!eval_only && loaded.has_training_state) restore(loaded, checkpoint);
  }

  if (saves && !checkpoint_lock_) checkpoint_lock_ = std::make_unique<CheckpointDirLock>(c.checkpoint_dir);
  if (hooks_.data_parallel) data_parallel_ = hooks_.data_parallel(*model_);
  if (data_parallel_ && !eval_only) data_parallel_->check_same_start(start_epoch_, start_position_);
  ENGINE_CHECK(
      c.accumulate == 1 || data_parallel_ != nullptr,
      "--accumulate {}: the Trainer needs a DataParallel to accumulate gradients (a bug in the caller)",
      c.accumulate);

  const Device device = device_->context().device;
  void* stream = device_->context().stream;
  StepDeviceRefs refs;  // the step state's device addresses when steps are CUDA graphs
  if (!eval_only) {
    graph_plan_ = plan_cuda_graph(
        c.cuda_graph,
        CudaGraphFacts{.cuda_device = device.is_cuda(),
                       .gpu_resident_data = c.gpu_resident_data,
                       .gloo = hooks_.gloo,
                       .sync_bn = hooks_.sync_bn,
                       .accumulate = c.accumulate,
                       .ema_every = c.ema_every,
                       .param_groups_change = optim::param_groups_change_with_epoch(param_group_rules_)});
    if (!graph_plan_.note.empty() && c.is_main()) print_line(graph_plan_.note);
  }
  if (graph_plan_.capture) {
    // Every step, the eager warm-up ones too, reads its per-step values from the step state's buffer.
    graph_ = std::make_unique<TrainingGraph>(*model_, *sgd_);
    refs = graph_->device_refs();
    sgd_->set_device_lr(refs.lr);
    model_->context().dropout_offset_device = refs.dropout_offset;
  }
  data::LoaderOptions test_options;
  test_options.batch_size = c.batch_size;
  test_options.drop_last = false;
  test_options.device = device;
  test_options.gpu_resident = device.is_cuda() && c.gpu_resident_data;
  test_options.stream = stream;
  test_options.image_layout = c.layout;  // batches as the model takes them (no transpose at its entry)
  test_options.transform = data::TransformConfig::eval(data_.mean, data_.std);
  test_loader_ = std::make_unique<data::Loader>(
      data_.test, data::DistributedSampler::eval_no_pad(data_.test.size(), c.world_size, c.rank),
      test_options);
  // --tta (apps/test_time_augmentation.h): one loader per extra view, in step with the test loader.
  tta_ = tta_plan(c.tta);
  for (const TtaView& v : tta_.views) {
    data::LoaderOptions o = test_options;
    o.transform = data::TransformConfig::view(data_.mean, data_.std, 1, v.dx, v.dy, v.flip);
    tta_loaders_.push_back(std::make_unique<data::Loader>(
        data_.test, data::DistributedSampler::eval_no_pad(data_.test.size(), c.world_size, c.rank), o));
  }
  if (!eval_only) {
    data::LoaderOptions train_options = test_options;
    train_options.transform = train_transform(c, data_, seed_);
    train_options.drop_last = train_drop_last(graph_plan_);
    train_options.device_epoch = refs.augment_epoch;
    train_options.device_batch_offset = refs.batch_offset;
    train_loader_ = std::make_unique<data::Loader>(
        data_.train, data::DistributedSampler(data_.train.size(), c.world_size, c.rank, true, seed_),
        train_options);
    ENGINE_CHECK(
        train_loader_->num_batches() > 0 || !train_options.drop_last,
        "--batch-size {}: CUDA graph steps drop an epoch's last partial batch, and this rank has only "
        "{} training samples: use a smaller batch or --cuda-graph off",
        c.batch_size, train_loader_->sampler().num_samples());
    // Optimizer steps per epoch (the last group of --accumulate may be short): what a per-step schedule
    // counts in.
    const std::int64_t batches = train_loader_->num_batches();
    const std::int64_t steps_per_epoch =
        std::max<std::int64_t>(1, (batches + c.accumulate - 1) / c.accumulate);
    schedule_ = std::make_unique<optim::LrSchedule>(c.schedule_config(steps_per_epoch));
    if (ema_) ema_->set_steps(c.ema_start_epoch * steps_per_epoch, c.epochs * steps_per_epoch);
    if (device.is_cuda()) step_losses_ = Tensor::empty_pinned({train_loader_->num_batches()}, DType::F32);
    if (graph_)
      step_losses_device_ = Tensor::zeros({train_loader_->num_batches()}, DType::F32, device, stream);
  }
  accumulators_ = Tensor::zeros({16}, DType::U8, device, stream);
  if (c.is_main()) {
    // The math (--precision) beside the device: on the CPU only bf16 changes it (its emulation).
    const std::string math = device.is_cuda() || autocast_bf16(c.precision)
                                 ? " " + std::string(choice_name(kPrecisionChoices, c.precision))
                                 : std::string();
    print_line(fmt::format("cnn_train: {} | model {} ({} parameters) | {}{} | seed {}", data_.description,
                           model_name, with_thousands(model_->parameter_count()), device.str(), math, seed_));
  }
}

Trainer::~Trainer() = default;

std::string Trainer::resolve_resume() const {
  const TrainConfig& c = config_;
  if (!c.resume_auto()) return c.resume;
  std::vector<std::string> notes;
  const std::optional<ResumePoint> found = newest_checkpoint(c.checkpoint_dir, &notes);
  if (c.is_main()) {
    for (const std::string& note : notes) print_line("cnn_train: " + note);
    if (!found) {
      print_line(fmt::format(
          "cnn_train: --resume auto: no checkpoint in {} yet: starting from scratch{}", c.checkpoint_dir,
          c.restart_count > 0 ? fmt::format(" (TORCHELASTIC_RESTART_COUNT={})", c.restart_count) : ""));
    }
  }
  return found ? found->path : "";
}

void Trainer::restore(const optim::LoadedCheckpoint& loaded, const std::string& path) {
  const TrainConfig& c = config_;
  const optim::TrainingState& st = loaded.state;
  start_epoch_ = st.epoch;
  seed_ = st.seed;
  model_->context().dropout_seed = rank_dropout_seed(seed_, c.rank);
  model_->context().dropout_offset = st.dropout_offset;
  if (seed_ != c.seed && c.is_main()) {
    print_line(
        fmt::format("cnn_train: continuing with the checkpoint's seed {} (not --seed {})", seed_, c.seed));
  }
  start_position_ = static_cast<std::int64_t>(st.sampler_position);
  if (const auto it = st.extra.find("history"); it != st.extra.end()) {
    try {  // the epochs done before this run, for --plot and the next checkpoints
      for (const EpochMetrics& m : parse_history_json(it->second))
        if (m.epoch <= start_epoch_) earlier_epochs_.push_back(m);
    } catch (const Error& e) {
      if (c.is_main())
        print_line(fmt::format("cnn_train: {}: {}: --plot draws this run's epochs only", path, e.what()));
    }
  }
  std::string where = fmt::format("{} epoch(s) done", start_epoch_);
  if (start_position_ > 0) {
    // Mid-epoch: the sampler continues at its position (checked against this run's world size by the
    // sampler), and the epoch's sums so far come back on rank 0, which alone adds them before the all-reduce.
    ENGINE_CHECK(st.sampler_epoch == static_cast<std::uint64_t>(start_epoch_),
                 "--resume {}: the sampler's epoch {} is not the epoch in progress {}", path,
                 st.sampler_epoch, start_epoch_ + 1);
    ENGINE_CHECK(
        start_position_ % c.world_size == 0,
        "--resume {}: the checkpoint was written mid-epoch at sampler position {}, which {} ranks cannot "
        "share evenly; resume with {} rank(s), or from an end-of-epoch checkpoint (epochN.safetensors)",
        path, start_position_, c.world_size, metadata_number(st, "world_size"));
    resumed_totals_.loss_sum = metadata_number(st, "epoch_loss_sum");
    resumed_totals_.correct = static_cast<std::int64_t>(metadata_number(st, "epoch_correct"));
    resumed_totals_.samples = static_cast<std::int64_t>(metadata_number(st, "epoch_samples"));
    where = fmt::format("epoch {} from sampler position {} ({} samples of it done)", start_epoch_ + 1,
                        start_position_, resumed_totals_.samples);
  }
  if (c.is_main()) {
    print_line(fmt::format(
        "cnn_train: resumed from {}: {}, optimizer step {}{}", path, where, st.step,
        c.restart_count > 0 ? fmt::format(" (TORCHELASTIC_RESTART_COUNT={})", c.restart_count) : ""));
  }
  if (std::filesystem::path(path).filename().string().rfind("step", 0) == 0) mid_epoch_file_ = path;
  // Cosine and triangle schedules and the weight average's decay ramp are laid over --epochs: the epochs done
  // followed the checkpoint's plan, so with another length the run need not be an uninterrupted one of
  // either.
  const auto planned = static_cast<std::int64_t>(metadata_number(st, "epochs"));
  const optim::ScheduleKind kind = c.schedule;
  const bool spans_run =
      kind == optim::ScheduleKind::Cosine || kind == optim::ScheduleKind::Triangle || ema_ != nullptr;
  if (c.is_main() && spans_run && planned > 0 && planned != c.epochs) {
    print_line(fmt::format(
        "cnn_train: the checkpoint's run was planned for {} epoch(s), this one for {}: the schedule and the "
        "weight average span {} from here on, so the result need not equal an uninterrupted {}-epoch run",
        planned, c.epochs, c.epochs, c.epochs));
  }
}

bool Trainer::vote_stop(bool at_epoch_end) {
  const bool local = stop_requested();
  if (!data_parallel_) return local;
  const std::int64_t every = device_->context().device.is_cuda() ? kStopVoteSteps : 1;
  if (!at_epoch_end && sgd_->steps() % every != 0) return false;
  return data_parallel_->any_rank(local);
}

[[noreturn]] void Trainer::stop(const std::string& saved) {
  throw StopRequested(fmt::format("stopped by {} {}", stop_signal_name(), saved), stop_signal());
}

EpochTotals Trainer::read_totals(std::int64_t samples) {
  const Tensor host = accumulators_.to(Device::cpu(), device_->context().stream);
  EpochTotals t;
  std::memcpy(&t.loss_sum, host.data<std::uint8_t>(), 8);
  std::memcpy(&t.correct, host.data<std::uint8_t>() + 8, 8);
  t.samples = samples;
  return t;
}

void Trainer::capture_step(const std::function<void()>& step, std::int64_t epoch, std::int64_t position) {
  const std::string failed = graph_->capture(step);
  if (data_parallel_ && config_.world_size > 1) {
    // Capture is a collective property of the NCCL calls inside (every rank captures them, or none): a rank
    // whose capture failed ends the run on all, after one vote outside any graph.
    const bool anywhere = data_parallel_->any_rank(!failed.empty());
    ENGINE_CHECK(
        !anywhere, "the CUDA graph capture of the training step failed {}; run with --cuda-graph off",
        failed.empty() ? std::string("on another rank (its message says why)") : "on this rank: " + failed);
  }
  if (failed.empty()) {
    graph_->launch_captured();
    if (config_.is_main()) {
      print_line(
          fmt::format("cnn_train: CUDA graph: the training step is captured after {} eager step(s) "
                      "({} kernels, {} dropout draws) and replayed from here on",
                      graph_eager_steps_, graph_->kernel_nodes(), graph_->dropout_forwards()));
    }
    return;
  }
  ENGINE_CHECK(config_.cuda_graph != CudaGraphMode::On,
               "--cuda-graph on: the capture of the training step failed: {}", failed);
  if (config_.is_main()) print_line("cnn_train: CUDA graph off (eager steps): the capture failed: " + failed);
  graph_failed_ = true;
  // The capture may have ended inside backward, after some gradient buckets were queued: the Reducer's step
  // state goes back to the step's start before the step runs again.
  if (data_parallel_) data_parallel_->abandon_step();
  // The capture took the loader's batch on the host but ran nothing (the host state is the step's start
  // again). The augment kernel reads the batch's position from the step state, not from the loader's count,
  // so restarting the epoch's count keeps next() from running out early; then the step runs eagerly.
  train_loader_->start_epoch(static_cast<std::uint64_t>(epoch), position);
  step();
  ++graph_eager_steps_;
}

void Trainer::check_losses(std::int64_t epoch, std::int64_t first, std::int64_t steps) {
  if (!step_losses_.defined()) return;
  if (graph_) {  // the loss kernel wrote each step's loss at its slot in device memory
    step_losses_.copy_from(step_losses_device_, device_->context().stream);
    device_->synchronize();
  }
  const float* losses = step_losses_.data<float>();
  for (std::int64_t s = first; s < steps; ++s) {
    if (!std::isfinite(losses[s])) {
      throw NonFiniteLoss(fmt::format("the training loss is {} at epoch {}, step {} (of {}); stopping",
                                      losses[s], epoch + 1, s + 1, steps),
                          __FILE__, __LINE__);
    }
  }
}

EpochTotals Trainer::train_epoch(std::int64_t epoch, std::int64_t position, EpochMetrics& m) {
  const bool lr_per_step = schedule_->config().unit == optim::ScheduleUnit::Step;
  double lr = lr_per_step ? schedule_->lr_at_step(sgd_->steps()) : schedule_->lr(epoch);
  if (optim::param_groups_change_with_epoch(param_group_rules_)) {  // --param-group ...:epochs=N
    sgd_->set_groups(optim::param_groups_for(*model_, param_group_rules_, config_.weight_decay, epoch));
  }
  void* stream = device_->context().stream;
  accumulators_.fill_bytes(0, stream);
  const layers::LossAccumulators acc{reinterpret_cast<double*>(accumulators_.data<std::uint8_t>()),
                                     reinterpret_cast<std::int64_t*>(accumulators_.data<std::uint8_t>() + 8)};
  // The sampler's and augmentation's epoch; a mid-epoch resume skips the batches every rank already did.
  train_loader_->start_epoch(static_cast<std::uint64_t>(epoch), position);
  const std::int64_t per_step = config_.batch_size * config_.world_size;  // sampler entries per batch
  const std::int64_t first = position / per_step;
  const std::int64_t batches = first + train_loader_->num_batches();
  ProgressBar bar(batches, first, config_.is_main());
  std::int64_t steps = first, samples = 0;
  ExecutionContext& ctx = model_->context();
  // One batch through forward, loss, backward and (when it ends an optimizer step) SGD: run eagerly, or
  // captured into the graph (then every per-step value comes from the step state graph_ published).
  auto train_batch = [&](const data::Batch& batch, std::int64_t group_size, bool ends_step) {
    layers::LossAccumulators step_acc = acc;
    if (graph_) {
      step_acc.step_losses = step_losses_device_.data<float>();
      step_acc.loss_slot = graph_->device_refs().loss_slot;
      step_acc.slots = step_losses_device_.numel();
    }
    const Tensor logits = model_->forward(batch.images, layers::Mode::Train);
    const Tensor loss = train_loss_.forward(ctx, logits, batch.labels, step_acc);
    if (loss.device().is_cpu()) {
      const float value = loss.data<float>()[0];
      bar.add_loss(value);  // on the CPU the loss is on the host for free
      if (!std::isfinite(value)) {
        bar.clear();
        throw NonFiniteLoss(fmt::format("the training loss is {} at epoch {}, step {} (of {}); stopping",
                                        value, epoch + 1, steps + 1, batches),
                            __FILE__, __LINE__);
      }
    } else if (!graph_) {
      step_losses_.flat_range(steps, {1}).copy_from(loss, stream);  // queued; checked once per epoch
    }
    if (data_parallel_) data_parallel_->before_backward(ends_step);
    model_->backward(train_loss_.backward(1.0 / static_cast<double>(group_size)));
    if (data_parallel_) data_parallel_->after_backward();
    if (ends_step) {
      sgd_->step(lr);
      if (ema_) ema_->after_step(sgd_->steps());
    }
  };
  const std::int64_t loader_batches = train_loader_->num_batches();
  for (std::int64_t k = 0; k < loader_batches; ++k) {
    // --accumulate K: batches [g, g + K) make one optimizer step (the epoch's last group may be shorter),
    // each contributing 1/size of its loss gradient, so the step sees their mean.
    const std::int64_t group_start = steps - steps % config_.accumulate;
    const std::int64_t group_size = std::min(config_.accumulate, batches - group_start);
    const bool ends_step = steps - group_start == group_size - 1;
    if (ends_step && lr_per_step) lr = schedule_->lr_at_step(sgd_->steps());  // m.lr logs the epoch's last
    if (graph_) {
      graph_->publish(make_step_state({.epoch = static_cast<std::uint64_t>(epoch),
                                       .loader_batch = k,
                                       .batches_before = first,
                                       .batch_size = config_.batch_size,
                                       .optimizer_steps = sgd_->steps(),
                                       .dropout_offset = ctx.dropout_offset,
                                       .lr = lr}));
    }
    std::int64_t batch_samples = config_.batch_size;  // every graph step's batch is full (drop_last)
    if (graph_ && graph_->captured()) {
      graph_->replay();
    } else if (graph_ && graph_eager_steps_ >= kCudaGraphWarmupSteps && !graph_failed_) {
      capture_step(
          [&] {
            data::Batch batch;
            ENGINE_CHECK(train_loader_->next(batch),
                         "the training loader ended before batch {} of {} (a bug)", k + 1, loader_batches);
            train_batch(batch, group_size, ends_step);
          },
          epoch, position);
    } else {
      data::Batch batch;
      ENGINE_CHECK(train_loader_->next(batch), "the training loader ended before batch {} of {} (a bug)",
                   k + 1, loader_batches);
      train_batch(batch, group_size, ends_step);
      batch_samples = batch.size();
      ++graph_eager_steps_;
    }
    ++steps;
    samples += batch_samples;
    bar.update(steps, samples);
    if (ends_step && steps < batches) {  // a step boundary inside the epoch: a checkpoint or a stop here?
      const bool periodic = config_.save_every_steps > 0 && sgd_->steps() % config_.save_every_steps == 0;
      const bool stopping = vote_stop(false);
      if (periodic || stopping) {
        bar.clear();
        device_->synchronize();
        check_losses(epoch, first, steps);
        EpochTotals partial = read_totals(samples), none;
        if (config_.is_main()) partial = partial + resumed_totals_;
        if (data_parallel_) data_parallel_->reduce_totals(partial, none);  // also the barrier before saving
        save_mid_epoch(epoch, position + (steps - first) * per_step, partial);
        // Nobody leaves before rank 0's file is complete: a launcher that sees one rank end stops the others.
        if (data_parallel_) data_parallel_->any_rank(false);
      }
      if (stopping) {
        stop(config_.checkpoint_dir.empty()
                 ? "(nothing saved: --checkpoint-dir is empty)"
                 : fmt::format(
                       "at epoch {}, step {} of {}: {}", epoch + 1, steps, batches,
                       config_.is_main() ? "saved " + mid_epoch_file_ : "rank 0 saved the checkpoint"));
      }
    }
  }
  if (ema_ && ema_->config().lookahead) ema_->finish_epoch();  // airbench: the average goes into the weights
  device_->synchronize();
  bar.clear();
  check_losses(epoch, first, steps);
  m.epoch = epoch + 1;
  m.lr = lr;
  m.steps = steps;
  m.batch_size = config_.batch_size;
  m.world_size = config_.world_size;
  EpochTotals totals = read_totals(samples);
  if (position > 0 && config_.is_main()) totals = totals + resumed_totals_;  // the sums before the resume
  return totals;
}

EpochTotals Trainer::evaluate(std::int64_t epochs_done) {
  if (data_parallel_) data_parallel_->before_evaluate(epochs_done);
  void* stream = device_->context().stream;
  accumulators_.fill_bytes(0, stream);
  const layers::LossAccumulators acc{reinterpret_cast<double*>(accumulators_.data<std::uint8_t>()),
                                     reinterpret_cast<std::int64_t*>(accumulators_.data<std::uint8_t>() + 8)};
  test_loader_->start_epoch(0);
  for (const auto& loader : tta_loaders_) loader->start_epoch(0);
  // --eval-ema: the average in the weights' place for the evaluation, then back.
  const bool on_average = config_.eval_ema && ema_ && ema_->initialized();
  if (on_average) ema_->swap_with_weights();
  std::int64_t samples = 0;
  for (data::Batch batch; test_loader_->next(batch);) {
    // Inference: no layer keeps its input for a backward, and the loss computes no gradient.
    const Tensor logits =
        tta_loaders_.empty() ? model_->forward(batch.images, layers::Mode::Inference) : tta_logits(batch);
    test_loss_.evaluate(model_->context(), logits, batch.labels, acc);
    samples += batch.size();
  }
  if (on_average) ema_->swap_with_weights();
  device_->synchronize();
  return read_totals(samples);
}

Tensor Trainer::tta_logits(const data::Batch& batch) {
  WeightedViewMean mean(device_->context(), model_->forward(batch.images, layers::Mode::Inference),
                        tta_.plain_weight);
  for (std::size_t v = 0; v < tta_loaders_.size(); ++v) {
    data::Batch view;
    const bool got = tta_loaders_[v]->next(view);
    ENGINE_CHECK(got && view.size() == batch.size(),
                 "--tta: view {} ran out of step with the test set (a bug)", v + 1);
    mean.add(model_->forward(view.images, layers::Mode::Inference), tta_.views[v].weight);
  }
  return mean.mean();
}

optim::TrainingState Trainer::training_state(std::int64_t epochs_done) const {
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
                 {"schedule", std::string(optim::schedule_kind_name(config_.schedule))},
                 {"epochs", std::to_string(config_.epochs)},  // the length schedules span (restore())
                 {"world_size", std::to_string(config_.world_size)},
                 {"history", format_history_json(whole_history())}};  // a resumed run's --plot
  return state;
}

void Trainer::write_checkpoint(const std::string& path, const optim::TrainingState& state) {
  optim::save_checkpoint(path, *model_, sgd_.get(), state, {}, ema_.get());
}

void Trainer::save(std::int64_t epochs_done) {
  const std::filesystem::path dir(config_.checkpoint_dir);
  const optim::TrainingState state = training_state(epochs_done);
  const std::string epoch_file = (dir / fmt::format("epoch{}.safetensors", epochs_done)).string();
  write_checkpoint(epoch_file, state);
  write_checkpoint((dir / "last.safetensors").string(), state);
  print_line(fmt::format("cnn_train: saved {}", epoch_file));
  if (!mid_epoch_file_.empty()) {  // superseded: an end-of-epoch checkpoint is further on
    std::error_code ignored;
    std::filesystem::remove(mid_epoch_file_, ignored);
    mid_epoch_file_.clear();
  }
}

void Trainer::save_mid_epoch(std::int64_t epoch, std::int64_t position, const EpochTotals& partial) {
  if (!config_.is_main() || config_.checkpoint_dir.empty()) return;
  optim::TrainingState state = training_state(epoch);  // `epoch` epochs done, the next one in progress
  state.sampler_position = static_cast<std::uint64_t>(position);
  // Shortest round-trip text: the partial loss sum comes back bit for bit.
  state.extra["epoch_loss_sum"] = fmt::format("{}", partial.loss_sum);
  state.extra["epoch_correct"] = std::to_string(partial.correct);
  state.extra["epoch_samples"] = std::to_string(partial.samples);
  const std::string file =
      (std::filesystem::path(config_.checkpoint_dir) / fmt::format("step{}.safetensors", sgd_->steps()))
          .string();
  write_checkpoint(file, state);
  print_line(fmt::format("cnn_train: saved {} (epoch {}, sampler position {})", file, epoch + 1, position));
  if (!mid_epoch_file_.empty() && mid_epoch_file_ != file) {
    std::error_code ignored;
    std::filesystem::remove(mid_epoch_file_, ignored);
  }
  mid_epoch_file_ = file;
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
  install_stop_handlers();  // from here on a stop signal ends the run after a checkpoint
  std::ofstream metrics;
  if (c.is_main() && !c.metrics.empty()) {
    metrics.open(c.metrics, resumed_from_.empty() ? std::ios::trunc : std::ios::app);
    ENGINE_CHECK(metrics.good(), "--metrics '{}': cannot write the file", c.metrics);
  }
  double last_acc = 0.0;
  if (start_epoch_ >= c.epochs && c.is_main()) {
    print_line(fmt::format("cnn_train: the checkpoint has {} epochs done, --epochs is {}: nothing to train",
                           start_epoch_, c.epochs));
  }
  // Time to accuracy (benchmarks/time_to_accuracy.sh) counts from here: the data is loaded (on a GPU,
  // resident there), the model built and initialized.
  const auto run_start = Clock::now();
  for (std::int64_t epoch = start_epoch_; epoch < c.epochs; ++epoch) {
    device_->reset_peak_memory();
    const auto start = Clock::now();
    EpochMetrics m;
    const std::int64_t position = epoch == start_epoch_ ? start_position_ : 0;
    EpochTotals train = train_epoch(epoch, position, m);
    m.seconds = seconds_since(start);
    EpochTotals test = evaluate(epoch + 1);
    if (data_parallel_) data_parallel_->reduce_totals(train, test);
    const double n = static_cast<double>(std::max<std::int64_t>(train.samples, 1));
    m.train_loss = train.loss_sum / n;
    m.train_acc = 100.0 * static_cast<double>(train.correct) / n;
    const std::int64_t resumed = position > 0 ? resumed_totals_.samples : 0;  // trained before the resume
    m.images_per_second = static_cast<double>(train.samples - resumed) / std::max(m.seconds, 1e-9);
    const double tn = static_cast<double>(std::max<std::int64_t>(test.samples, 1));
    m.test_loss = test.loss_sum / tn;
    m.test_acc = 100.0 * static_cast<double>(test.correct) / tn;
    m.elapsed_seconds = seconds_since(run_start);  // the totals are on the host: the evaluation has ended
    m.memory_mb = static_cast<double>(device_->peak_memory_bytes()) / (1024.0 * 1024.0);
    m.precision = std::string(choice_name(kPrecisionChoices, c.precision));
    // bf16 autocast: a writer of the weights that forgot the mirror is caught here, once an epoch.
    model_->check_bf16_mirror(fmt::format("epoch {}", epoch + 1));
    last_acc = m.test_acc;
    history_.push_back(m);
    if (c.is_main() || c.log_all_ranks) print_line(format_epoch_line(device_->label(), m));
    const std::int64_t done = epoch + 1;
    const bool stopping = done < c.epochs && vote_stop(true);
    if (c.is_main()) {
      if (metrics.is_open()) {
        metrics << format_metrics_json(m) << '\n';
        metrics.flush();
      }
      if (!c.checkpoint_dir.empty() && ((c.save_every > 0 && done % c.save_every == 0) || done == c.epochs ||
                                        c.resume_auto() || stopping)) {
        save(done);
      }
      if (!c.plot.empty())
        plot_or_warn(whole_history(), c.plot, fmt::format("{} on {}", model_->name(), c.dataset));
    }
    if (stopping) {
      if (data_parallel_) data_parallel_->any_rank(false);  // nobody leaves before rank 0's file is complete
      stop(c.checkpoint_dir.empty()
               ? "(nothing saved: --checkpoint-dir is empty)"
               : fmt::format("after epoch {}: saved {}/epoch{}.safetensors", done, c.checkpoint_dir, done));
    }
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
