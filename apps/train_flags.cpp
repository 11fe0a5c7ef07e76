#include "apps/train_flags.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "apps/cli/choice_option.h"
#include "apps/cli/number_range.h"
#include "apps/cli/output_path.h"
#include "apps/train/checkpoint_folder.h"
#include "apps/train/dataset_catalog.h"
#include "apps/train/model_defaults.h"
#include "apps/train/recipe.h"
#include "core/error.h"
#include "layers/models.h"
#include "layers/onnx/onnx_model.h"
#include "optim/param_groups.h"

namespace engine::apps {

namespace {

std::string check_dataset(const std::string& v) {
  if (find_dataset(v) != nullptr) return {};
  return "unknown dataset '" + v + "': expected " + dataset_names();
}

std::string check_model(const std::string& v) {
  // A model from a file (layers/onnx/onnx_model.h): read, and refused with its reasons, once the data is
  // known.
  if (layers::onnx::is_onnx_path(v)) return {};
  for (const std::string& name : layers::model_names()) {
    if (v == name) return {};
  }
  std::string known;
  for (const std::string& name : layers::model_names()) known += (known.empty() ? "" : ", ") + name;
  return "unknown model '" + v + "': expected one of " + known;
}

std::string model_of(const DatasetEntry& e) { return std::string(e.default_model); }
std::string batch_size_of(const ModelDefaults& d) { return std::to_string(d.batch_size); }
std::string lr_of(const ModelDefaults& d) { return fmt::format("{}", d.lr); }

// The airbench pieces' flags (issue 18), in one block.
void add_airbench_flags(CLI::App& app, TrainConfig& c) {
  add_choice_option(app, "--schedule-unit", c.schedule_unit, kScheduleUnitChoices,
                    "epoch: the rate changes once per epoch; step: after every optimizer step (warmup, step "
                    "and cosine lengths stay in epochs, counted in steps)");
  app.add_option("--triangle-start", c.triangle_start, "triangle schedule: the factor of --lr at the start")
      ->check(number_range(0.0, 1e300));
  app.add_option("--triangle-peak", c.triangle_peak,
                 "triangle schedule: the fraction of the run where the rate peaks at --lr")
      ->check(number_range(0.0, 1.0));
  app.add_option("--triangle-end", c.triangle_end, "triangle schedule: the factor of --lr at the end")
      ->check(number_range(0.0, 1e300));
  app.add_option("--param-group", c.param_groups,
                 "SELECTOR:SETTINGS, repeatable: parameters with their own SGD settings. SELECTOR: Kind.leaf "
                 "(BatchNorm2d.bias) or text in the parameter's name; SETTINGS: lr=X (times the scheduled "
                 "rate), wd=X, frozen, epochs=N (trained in the first N epochs only); e.g. "
                 "BatchNorm2d.bias:lr=64,wd=0")
      ->allow_extra_args(false);
  app.add_option("--ema-every", c.ema_every,
                 "average the weights every K optimizer steps (0: no average); the decay per update is "
                 "D^K * (step / total steps)^P, as airbench94")
      ->check(number_range(std::int64_t{0}, std::int64_t{1000000}));
  app.add_option("--ema-start-epoch", c.ema_start_epoch, "the first epoch (0-based) that updates the average")
      ->check(number_range(std::int64_t{0}, std::int64_t{1000000}));
  app.add_option("--ema-decay", c.ema_decay, "the average's decay per step, D")
      ->check(number_range(0.0, 1.0));
  app.add_option("--ema-decay-pow", c.ema_decay_pow, "the decay's warm-up power, P")
      ->check(number_range(0.0, 1e300));
  add_choice_option(app, "--ema-mode", c.ema_mode, kEmaModeChoices,
                    "lookahead: the average is copied into the weights at every update and after every epoch "
                    "(airbench94); average: kept beside the weights");
  app.add_flag("--eval-ema", c.eval_ema, "--ema-mode average: evaluate on the averaged weights");
  app.add_option("--translate", c.translate, "--augment flip-translate: the largest shift in pixels")
      ->check(number_range(0, 1 << 16));
  app.add_option("--tta", c.tta,
                 "test-time augmentation (airbench94): 0 none; 1 average the logits of the image and its "
                 "mirror; 2 also of the image shifted by one pixel up-left and down-right, each mirrored too")
      ->check(number_range(0, 2));
}

// --whiten-init (apps/train/whiten_init.h).
void add_whiten_init_flag(CLI::App& app, TrainConfig& c) {
  app.add_option("--whiten-init", c.whiten_init,
                 "set the first convolution (k x k, out = 2 * in*k*k channels, as airbench94's 2x2, 3 -> 24) "
                 "to the patch-whitening filters of the first N training images: the eigenvectors of their "
                 "patches' covariance over sqrt(eigenvalue + 5e-4), and their negatives (0: off; airbench94 "
                 "uses 5000)")
      ->check(number_range(std::int64_t{0}, std::int64_t{1} << 40));
}

}  // namespace

void add_train_flags(CLI::App& app, TrainConfig& c) {
  app.option_defaults()->always_capture_default();
  app.add_option("--dataset", c.dataset,
                 dataset_names() + " (folder: PATH/train and PATH/test, one sub-folder per class)")
      ->required()
      ->check(check_dataset);
  add_choice_option(
      app, "--recipe", c.recipe, kRecipeChoices,
      "airbench94: every hyperparameter of airbench94 (CIFAR-10 to 94%: --model airbench, batch "
      "1024, 10 epochs, triangle per step, Nesterov SGD lr 1.5 x batch/1024, label smoothing "
      "0.2, BatchNorm biases at 64x lr, lookahead every 5 steps, flip-translate 2, tta 2; see "
      "README); a flag given on the command line still wins");
  app.add_option("--data-dir", c.data_dir, "dataset folder (default: " + default_roots_help() + ")");
  app.add_flag("--download", c.download,
               "download " + join_names(downloadable_dataset_names(), " or ") +
                   " into --data-dir (or the default folder) when missing; distributed: local rank 0 of each "
                   "node downloads while the others wait");
  app.add_option("--model", c.model,
                 "vgg6, cnn3, mnist_cnn, resnet18, airbench, or an ONNX file FILE.onnx (default: " +
                     defaults_by_dataset(model_of) + "; on --resume/--eval-only: the checkpoint's)")
      ->check(check_model);
  app.add_flag("--new-head", c.new_head,
               "transfer learning: the ONNX model's classifier (its last Linear or 1x1 Conv) replaced by one "
               "of the data's classes, freshly initialized, its names kept (freeze the rest with "
               "--param-group)");
  app.add_option("--epochs", c.epochs, "epochs to train (in all, counting resumed ones)")
      ->check(number_range(std::int64_t{1}, std::int64_t{1000000}));
  app.add_option(
         "--batch-size", c.batch_size,
         "samples per step per process (default by model: " + model_defaults_help(batch_size_of) + ")")
      ->check(number_range(std::int64_t{1}, std::int64_t{1} << 20))
      ->default_str("by model");
  app.add_option("--lr", c.lr, "base learning rate (default by model: " + model_defaults_help(lr_of) + ")")
      ->check(number_range(0.0, 1e300))
      ->default_str("by model");
  app.add_option("--momentum", c.momentum, "SGD momentum")->check(number_range(0.0, 1e300));
  app.add_option("--weight-decay", c.weight_decay, "L2 weight decay added to the gradient")
      ->check(number_range(0.0, 1e300));
  app.add_flag("--nesterov", c.nesterov, "Nesterov momentum");
  add_choice_option(app, "--schedule", c.schedule, kScheduleChoices,
                    "learning-rate schedule (changed once per --schedule-unit)");
  app.add_option("--step-epochs", c.step_epochs,
                 "step schedule: N (decay every N epochs) or milestones N1,N2,... (decay at each)");
  app.add_option("--gamma", c.gamma, "step schedule: the decay factor")->check(number_range(1e-300, 1e300));
  app.add_option("--warmup-epochs", c.warmup_epochs, "linear warmup: epoch e < W runs at lr * (e+1)/W")
      ->check(number_range(std::int64_t{0}, std::int64_t{1000000}));
  add_airbench_flags(app, c);
  add_whiten_init_flag(app, c);
  app.add_option("--label-smoothing", c.label_smoothing, "label smoothing of the cross-entropy loss")
      ->check(number_range(0.0, 1.0));
  app.add_option("--accumulate", c.accumulate,
                 "gradient accumulation: one optimizer step per K batches, on the mean of their gradients "
                 "(an effective batch of K * --batch-size per process; with DDP, one all-reduce per step)")
      ->check(number_range(std::int64_t{1}, std::int64_t{1000000}));
  add_choice_option(
      app, "--augment", c.augment, kAugmentChoices,
      "training augmentation: none; crop-flip (random crop with 4 pixels of zero padding, random "
      "horizontal flip); flip-translate (airbench94: flip on alternate epochs with a random phase "
      "per image, translate by up to --translate pixels with reflection padding)");
  app.add_option("--image-size", c.image_size,
                 "folder datasets: the square crop the model sees (training: RandomResizedCrop with "
                 "--augment crop-flip; evaluation: center crop)")
      ->check(number_range(std::int64_t{8}, std::int64_t{4096}));
  app.add_option("--resize", c.resize,
                 "folder datasets: evaluation's shorter side before the center crop (default: "
                 "--image-size x 256/224, torchvision's Resize(256) + CenterCrop(224))")
      ->check(number_range(std::int64_t{8}, std::int64_t{8192}));
  app.add_flag("--skip-bad-images", c.skip_bad_images,
               "folder datasets: name, count and skip an image that cannot be read or decoded during an "
               "epoch (default: stop the run; its last checkpoint stays)");
  app.add_option("--seed", c.seed, "seed of initialization, shuffling, augmentation and dropout")
      ->check(number_range(std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max()));
  app.add_flag("--cpu", c.cpu, "train on the CPU even when a GPU is present");
  app.add_option("--limit-train", c.limit_train, "use only the first N training samples (0: all)")
      ->check(number_range(std::int64_t{0}, std::int64_t{1} << 40));
  app.add_option("--limit-test", c.limit_test, "use only the first N test samples (0: all)")
      ->check(number_range(std::int64_t{0}, std::int64_t{1} << 40));
  app.add_option("--save-every", c.save_every, "save a checkpoint every N epochs (0: only at the end)")
      ->check(number_range(std::int64_t{0}, std::int64_t{1000000}));
  app.add_option("--save-every-steps", c.save_every_steps,
                 "also save a mid-epoch checkpoint (stepS.safetensors, with the sampler's position; only the "
                 "newest is kept) every K optimizer steps, for --resume auto after a crash or preemption (0: "
                 "none)")
      ->check(number_range(std::int64_t{0}, std::int64_t{1} << 40));
  app.add_option("--checkpoint-dir", c.checkpoint_dir,
                 "folder for checkpoints (epochE.safetensors, last.safetensors); an empty string saves none");
  app.add_option("--resume", c.resume,
                 "continue training from this checkpoint, or 'auto': from the newest checkpoint in "
                 "--checkpoint-dir, mid-epoch ones included (none: start from scratch); auto also saves one "
                 "every epoch (what a job restarted by torchrun --max-restarts or requeued by Slurm needs)");
  app.add_flag(
      "--overwrite", c.overwrite,
      "a new run into a --checkpoint-dir holding an earlier run's checkpoints removes them (without it "
      "such a run is refused; --resume auto continues the earlier run)");
  app.add_option("--eval-only", c.eval_only, "evaluate this checkpoint on the test set and exit");
  app.add_option("--metrics", c.metrics, "write one JSON line per epoch to this file");
  app.add_option("--plot", c.plot, "write loss and accuracy curves per epoch to this PNG (needs gnuplot)");
  app.add_option(
      "--tensorboard", c.tensorboard,
      "write TensorBoard event files into this folder (tensorboard --logdir DIR): the numbers of each "
      "epoch, the loss every --tensorboard-every steps, weight and gradient histograms, a sample grid");
  app.add_option("--tensorboard-every", c.tensorboard_every,
                 "with --tensorboard: the loss every N optimizer steps")
      ->check(number_range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--trace", c.trace,
                 "write a trace of --trace-steps training steps to this .json (Chrome trace-event format: "
                 "ui.perfetto.dev or chrome://tracing): each layer's forward and backward, the loss, the "
                 "optimizer, the wait for data");
  app.add_option("--trace-steps", c.trace_steps, "with --trace: how many steps, after the first")
      ->check(number_range(std::int64_t{1}, std::int64_t{1000}));
  app.add_option("--confusion", c.confusion,
                 "after training, draw the confusion matrix on the test set to this PNG (its numbers go to "
                 "--metrics)");
  app.add_option("--misclassified", c.misclassified,
                 "after training, draw the test images the model gets wrong, with both classes, to this PNG");
  add_choice_option(
      app, "--precision", c.precision, kPrecisionChoices,
      "float32 math: tf32 (PyTorch's default: TF32 tensor cores for convolutions on a GPU, fp32 "
      "for Linear), fp32 (no TF32 anywhere; what the CUDA-vs-CPU tests compare) or bf16 "
      "(autocast at Conv2d and Linear: bf16 inputs, weights and outputs, fp32 accumulation, fp32 "
      "master weights and checkpoints; on the CPU an exact emulation in float32)");
  add_choice_option(
      app, "--cuda-graph", c.cuda_graph, kCudaGraphChoices,
      "CUDA: replay the whole training step as one CUDA graph after a warm-up step (the epoch's "
      "last partial batch is then dropped). auto: where possible, else eager with a line saying "
      "why (gloo, --sync-bn, --accumulate > 1, --ema-every, --param-group epochs=N); on: an error "
      "where impossible; off: eager steps");
  add_choice_option(app, "--layout", c.layout, kLayoutChoices, kLayoutHelp);
  add_choice_option(app, "--cpu-conv-algo", c.cpu_conv_algo, kCpuConvAlgoChoices, kCpuConvAlgoHelp);
  app.add_flag("--deterministic", c.deterministic,
               "bitwise repeatable runs (CUDA: deterministic cuDNN algorithms, no benchmark search)");
}

void finish_train_config(const CLI::App& app, TrainConfig& c) {
  const DatasetEntry& dataset = dataset_entry(c.dataset);
  c.model_given = app.count("--model") > 0;
  c.image_size_given = app.count("--image-size") > 0;
  c.resize_given = app.count("--resize") > 0;
  if (!c.model_given) c.model = dataset.default_model;
  const ModelDefaults& defaults = model_defaults(c.model);
  if (c.batch_size == 0) c.batch_size = defaults.batch_size;
  if (app.count("--lr") == 0) c.lr = defaults.lr;
  apply_recipe(c, [&app](const char* flag) {
    return app.count(flag) > 0;
  });  // over the model's defaults, under the flags given
  ENGINE_CHECK(std::isfinite(c.lr), "--lr {}: must be finite", c.lr);
  ENGINE_CHECK(!c.download || dataset.downloadable(), "--download: only {} can be downloaded; {}",
               join_names(downloadable_dataset_names(), " and "), dataset.not_downloadable_because);
  ENGINE_CHECK(c.resume.empty() || c.eval_only.empty(), "--resume and --eval-only exclude each other");
  ENGINE_CHECK(dataset.folder_in_name ||
                   (app.count("--image-size") + app.count("--resize") + app.count("--skip-bad-images")) == 0,
               "--image-size, --resize and --skip-bad-images are for folder:PATH datasets, not {}",
               c.dataset);
  ENGINE_CHECK(c.resize == 0 || c.resize >= c.image_size, "--resize {}: smaller than --image-size {}",
               c.resize, c.image_size);
  if (dataset.folder_in_name) c.gpu_resident_data = false;  // read from disk: the staged CUDA loader
  ENGINE_CHECK(!c.resume_auto() || !c.checkpoint_dir.empty(),
               "--resume auto looks for checkpoints in --checkpoint-dir, which is empty");
  ENGINE_CHECK(c.save_every_steps == 0 || !c.checkpoint_dir.empty(),
               "--save-every-steps {}: --checkpoint-dir is empty, so nothing would be saved",
               c.save_every_steps);
  ENGINE_CHECK(c.schedule == optim::ScheduleKind::Step || c.step_epochs.empty(),
               "--step-epochs needs --schedule step");
  ENGINE_CHECK(!c.nesterov || (c.momentum > 0.0), "--nesterov needs --momentum > 0");
  ENGINE_CHECK(c.plot.empty() || c.plot.size() < 4 || c.plot.substr(c.plot.size() - 4) == ".png",
               "--plot '{}': the file name must end in .png", c.plot);
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--confusion", c.confusion},
                                   {"--misclassified", c.misclassified}}) {
    ENGINE_CHECK(path.empty() || (path.size() > 4 && path.substr(path.size() - 4) == ".png"),
                 "{} '{}': the file name must end in .png", flag, path);
  }
  ENGINE_CHECK(c.trace.empty() || (c.trace.size() > 5 && c.trace.substr(c.trace.size() - 5) == ".json"),
               "--trace '{}': the file name must end in .json", c.trace);
  // Every output file's folder, before any data is read: found missing after the run had trained, before.
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--metrics", c.metrics},
                                   {"--plot", c.plot},
                                   {"--trace", c.trace},
                                   {"--confusion", c.confusion},
                                   {"--misclassified", c.misclassified}}) {
    check_output_file(flag, path);
  }
  ENGINE_CHECK(
      !c.overwrite || (c.resume.empty() && c.eval_only.empty()),
      "--overwrite starts a new run in --checkpoint-dir; --resume and --eval-only read one: give one "
      "of them");
  check_new_run_folder(c);
  ENGINE_CHECK(!c.new_head || layers::onnx::is_onnx_path(c.model),
               "--new-head replaces an ONNX model's classifier; --model {} is not an ONNX file (FILE.onnx)",
               c.model);
  // An ONNX model by its absolute path: the checkpoints name it, and are used from other folders.
  if (layers::onnx::is_onnx_path(c.model)) c.model = std::filesystem::absolute(c.model).lexically_normal();
  c.schedule_config().validate();  // --step-epochs syntax, milestones, warmup
  for (const std::string& rule : c.param_groups) optim::parse_param_group_rule(rule);  // the syntax, early
  ENGINE_CHECK(
      !c.eval_ema || (c.ema_every > 0 && c.ema_mode == EmaMode::Average),
      "--eval-ema needs --ema-every K > 0 and --ema-mode average (lookahead weights are the average)");
}

}  // namespace engine::apps
