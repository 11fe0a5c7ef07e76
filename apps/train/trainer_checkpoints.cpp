#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/train/eval_transform.h"
#include "apps/train/resume_auto.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_internal.h"
#include "core/error.h"
#include "data/disk_images.h"

namespace engine::apps {

using namespace trainer_internal;  // the Trainer's own helpers (trainer_internal.h)

namespace {

// A number of the checkpoint's metadata written by save_mid_epoch (absent: 0).
double metadata_number(const optim::TrainingState& state, const std::string& key) {
  const auto it = state.extra.find(key);
  return it == state.extra.end() ? 0.0 : std::stod(it->second);
}

}  // namespace

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
        "cnn_train: resumed from {}: {}, optimizer step {}, on {} rank(s){}", path, where, st.step,
        c.world_size,
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
  // An ONNX model whose classifier --new-head replaced: --resume, --eval-only and cnn_predict replace it too.
  if (new_head_) state.extra.emplace("new_head", "1");
  if (data_.test.on_disk()) {  // a folder's evaluation transform (apps/train/eval_transform.h)
    state.extra[kEvalResizeKey] =
        std::to_string(config_.resize > 0 ? config_.resize : data::default_resize(config_.image_size));
    state.extra[kEvalCropKey] = std::to_string(config_.image_size);
  }
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
  observers_.checkpoint_written(
      {.path = epoch_file, .epochs_done = epochs_done, .optimizer_steps = sgd_->steps()});
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
  observers_.checkpoint_written(
      {.path = file, .epochs_done = epoch, .optimizer_steps = sgd_->steps(), .mid_epoch = true});
}

void Trainer::save_checkpoint() {
  if (!here_.inside_epoch) {
    if (config_.is_main() && !config_.checkpoint_dir.empty()) save(here_.epochs_done);
    return;
  }
  // At a step boundary inside an epoch, on every rank: the epoch's sums so far over all ranks go with it.
  const Position& h = here_;
  device_->synchronize();
  check_losses(h.epoch, h.first, h.steps);
  EpochTotals partial = read_totals(h.samples), none;
  if (config_.is_main()) partial = partial + resumed_totals_;
  if (data_parallel_) data_parallel_->reduce_totals(partial, none);       // also the barrier before saving
  const std::int64_t per_step = config_.batch_size * config_.world_size;  // sampler entries per batch
  save_mid_epoch(h.epoch, h.position + (h.steps - h.first) * per_step, partial);
  // Nobody leaves before rank 0's file is complete: a launcher that sees one rank end stops the others.
  if (data_parallel_) data_parallel_->any_rank(false);
}

}  // namespace engine::apps
