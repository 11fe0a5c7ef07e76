#include "apps/train/trainer.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "apps/train/checkpoint_folder.h"
#include "apps/train/checkpoint_lock.h"
#include "apps/train/checkpoint_match.h"
#include "apps/train/cuda_graph_policy.h"
#include "apps/train/eval_only_transform.h"
#include "apps/train/trainer_internal.h"
#include "apps/train/whiten_init.h"
#include "core/error.h"
#include "kernels/cpu_fast/conv2d_algo.h"
#include "kernels/cpu_fast/host_probe.h"
#include "layers/models.h"
#include "optim/param_groups.h"

namespace engine::apps {

using namespace trainer_internal;  // the Trainer's own helpers (trainer_internal.h)

namespace {

data::TransformConfig train_transform(const TrainConfig& c, const TrainData& d, std::uint64_t seed) {
  if (c.augment == Augment::CropFlip && d.train.on_disk()) {  // the crop is the source's RandomResizedCrop
    data::TransformConfig t = data::TransformConfig::eval(d.mean, d.std);
    t.random_flip = true;
    t.seed = seed;
    return t;
  }
  if (c.augment == Augment::CropFlip) return data::TransformConfig::train(d.mean, d.std, seed);
  if (c.augment == Augment::FlipTranslate)
    return data::TransformConfig::flip_translate(d.mean, d.std, seed, c.translate);
  data::TransformConfig t = data::TransformConfig::eval(d.mean, d.std);
  t.seed = seed;
  return t;
}

}  // namespace

Trainer::Trainer(TrainConfig config, TrainerHooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)), train_loss_(config_.label_smoothing) {
  const TrainConfig& c = config_;
  auto clock = std::make_unique<RunClock>();  // first: it times the run before any output works
  clock_ = clock.get();
  observers_.attach(std::move(clock));
  seed_ = c.seed;
  device_ = std::make_unique<TrainDevice>(c.cpu, c.device_index, c.deterministic, c.precision,
                                          rank_dropout_seed(c.seed, c.rank));
  const ResolvedLayout layout = resolve_layout(c.layout, device_->is_cuda(), cpu_fast::onednn_isa());
  ENGINE_CHECK(!is_blocked(layout.layout) || !device_->is_cuda(),
               "--layout {}: the blocked layouts are the CPU's (oneDNN's nChw8c/nChw16c); on a GPU use nchw "
               "or nhwc",
               choice_name(kLayoutChoices, c.layout));
  device_->set_layout(layout.layout);
  if (!device_->is_cuda()) cpu_fast::set_conv_algo(effective_cpu_conv_algo(c.cpu_conv_algo, c.deterministic));
  if (device_->fell_back_to_cpu() && c.is_main()) print_line("cnn_train: no GPU found: training on the CPU");
  const bool eval_only = !c.eval_only.empty();
  if (eval_only) {  // the checkpoint's evaluation transform (apps/train/eval_only_transform.h)
    const EvalOnlyTransform t = adopt_checkpoint_transform(
        config_, c.eval_only, optim::SafetensorsFile::read(c.eval_only).metadata());
    if (!t.note.empty() && c.is_main()) print_line(t.note);
    data_ = load_test_data(c, t.mean, t.std);
  } else {
    data_ = load_train_data(c);
  }
  const data::Dataset& shape_source = data_.test;
  // Rank 0 alone saves, and alone locks --checkpoint-dir (apps/train/checkpoint_lock.h): for --resume auto
  // before it reads the folder, else once the data, model and checkpoint are read (a run refused for bad
  // input leaves no folder), before the ranks' first collective.
  const bool saves = c.is_main() && !eval_only && !c.checkpoint_dir.empty();
  if (saves && c.resume_auto()) checkpoint_lock_ = std::make_unique<CheckpointDirLock>(c.checkpoint_dir);
  const std::string checkpoint = eval_only ? c.eval_only : resolve_resume();
  std::string model_name = c.model;
  new_head_ = c.new_head;
  if (!checkpoint.empty()) {
    const optim::SafetensorsFile file = optim::SafetensorsFile::read(checkpoint);
    const std::string note = check_checkpoint_fits_run(
        eval_only ? "--eval-only" : (c.resume_auto() ? "--resume auto" : "--resume"), checkpoint,
        file.metadata(),
        {c.dataset, c.model_given ? c.model : "", shape_source.class_names, shape_source.channels,
         shape_source.height, shape_source.width, !eval_only});
    if (!note.empty() && c.is_main()) print_line(note);
    // The checkpoint says which model it holds; a checkpoint without that (PyTorch's) keeps the default.
    const auto it = file.metadata().find("model");
    if (!c.model_given && it != file.metadata().end()) model_name = it->second;
    const auto head =
        file.metadata().find("new_head");  // a run of --new-head: its model had the head replaced
    new_head_ = new_head_ || (head != file.metadata().end() && head->second == "1" &&
                              it != file.metadata().end() && it->second == model_name);
  }
  model_ = std::make_unique<layers::Model>(
      layers::build_model(model_name, static_cast<int>(shape_source.channels),
                          static_cast<int>(shape_source.num_classes()), static_cast<int>(shape_source.height),
                          static_cast<int>(shape_source.width), hooks_.make_batchnorm, new_head_));
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
  if (saves && c.overwrite) remove_run_checkpoints(c.checkpoint_dir);  // apps/train/checkpoint_folder.h
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
    // --trace needs eager steps: a replayed graph runs no layer's code, so nothing would open a span.
    ENGINE_CHECK(c.trace.empty() || c.cuda_graph != CudaGraphMode::On,
                 "--trace and --cuda-graph on exclude each other (a replayed graph has no per-layer spans)");
    graph_plan_ = plan_cuda_graph(
        c.trace.empty() ? c.cuda_graph : CudaGraphMode::Off,
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
  // Batches as the model takes them (no transpose at its entry); a blocked model's images (3 channels) NCHW.
  test_options.image_layout = layout.layout == Layout::NHWC ? Layout::NHWC : Layout::NCHW;
  test_options.transform = data::TransformConfig::eval(data_.mean, data_.std);
  test_loader_ = std::make_unique<data::Loader>(
      data_.test, data::DistributedSampler::eval_no_pad(data_.test.size(), c.world_size, c.rank),
      test_options);
  // --tta (apps/train/test_time_augmentation.h): one loader per extra view, in step with the test loader.
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
  ENGINE_CHECK((c.confusion.empty() && c.misclassified.empty()) || c.world_size == 1,
               "--confusion and --misclassified need one process (each rank sees only its share of the test "
               "set): run them with --eval-only on the checkpoint, on one process");
  if (c.is_main()) {
    // The math (--precision) beside the device: on the CPU only bf16 changes it.
    const std::string math = device.is_cuda() || autocast_bf16(c.precision)
                                 ? fmt::format(" {}", choice_name(kPrecisionChoices, c.precision))
                                 : std::string();
    // The CPU: the instructions oneDNN runs, the 3x3 convolutions' algorithm (--cpu-conv-algo) and the
    // activations' layout with why (--layout auto's choice), last.
    const std::string host =
        device.is_cuda() ? std::string()
                         : fmt::format(" | oneDNN {}, 3x3 conv {}, layout {} ({})", cpu_fast::onednn_isa(),
                                       cpu_fast::conv_algo_name(cpu_fast::conv_algo()),
                                       layout_name(layout.layout), layout.why);
    print_line(fmt::format("cnn_train: {} | model {} ({} parameters) | {}{} | seed {}", data_.description,
                           model_name, with_thousands(model_->parameter_count()), device.str(), math, seed_) +
               host);
  }
}

Trainer::~Trainer() = default;

}  // namespace engine::apps
