// Watching a cnn_train run (label cpu), end to end on the tiny image-folder dataset: --tensorboard's event
// files (the tags of each epoch, the step losses on the grid, weight and gradient histograms, the sample
// grid, and a resumed run's file starting where the checkpoint left off, read back by TensorBoard's own
// reader where it is installed; the grid is the first batch as augmented), --trace's Chrome trace (every
// layer's forward and backward inside each step, the loss, the optimizer, the data wait; on two ranks every
// bucket's all-reduce on the communication track), and --confusion / --misclassified (the PNGs, the matrix
// in --metrics).

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "apps/train/gnuplot.h"
#include "core/trace.h"
#include "tests/common/environment.h"
#include "tests/common/pytorch_tools.h"
#include "tests/common/trace_checks.h"
#include "tests/cpu/cnn_train_test_util.h"

#if ENGINE_HAVE_TENSORBOARD
#include "apps/pictures/data_grid.h"
#include "apps/tensorboard/event.pb.h"
#include "apps/tensorboard/event_writer.h"
#include "apps/train/train_data.h"
#include "data/loader.h"
#endif

namespace engine::apps {
namespace {

using testing::run_train;
using testing::with_args;

std::vector<std::string> tiny_run(const std::string& root, const std::string& dir, int epochs) {
  return with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", 8, epochs));
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

#if ENGINE_HAVE_TENSORBOARD
// tag -> steps logged, over the files of `dir` in order (a START record notes its step as "START").
std::map<std::string, std::vector<std::int64_t>> tags_and_steps(const std::string& dir) {
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const std::string& f : event_files(dir)) {
    for (const std::string& record : tensorboard::read_event_records(f)) {
      tensorboard::Event e;
      EXPECT_TRUE(e.ParseFromString(record)) << f;
      if (e.has_session_log()) out["START"].push_back(e.step());
      for (const auto& v : e.summary().value()) out[v.tag()].push_back(e.step());
    }
  }
  return out;
}

TEST(CnnTrainObserve, TensorboardLogsEpochsStepsHistogramsAndAResumedRunWithoutRepeats) {
  const std::string root = testing::tiny_folder_dataset("observe_tb", 24);  // 72 samples: 9 steps an epoch
  const std::string dir = testing::temp_dir("observe_tb_ckpt"), tb = dir + "/tensorboard";
  auto first = with_args(tiny_run(root, dir, 1), {"--tensorboard", tb, "--tensorboard-every", "2"});
  testing::RunResult r = run_train(first);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto tags = tags_and_steps(tb);
  EXPECT_EQ(tags["train/loss"], std::vector<std::int64_t>{9}) << "one epoch of 9 optimizer steps";
  EXPECT_EQ(tags["test/accuracy"], std::vector<std::int64_t>{9});
  EXPECT_EQ(tags["train/step_loss"], (std::vector<std::int64_t>{2, 4, 6, 8}));
  EXPECT_EQ(tags["train/samples"], std::vector<std::int64_t>{0});
  EXPECT_EQ(tags["weights/features.0.weight"], std::vector<std::int64_t>{9});
  EXPECT_EQ(tags["gradients/features.0.weight"], std::vector<std::int64_t>{9});
  EXPECT_EQ(tags["gradient_norm/features.0.weight"], std::vector<std::int64_t>{9});
  EXPECT_TRUE(tags["START"].empty());

  auto resumed = with_args(tiny_run(root, dir, 2), {"--tensorboard", tb, "--tensorboard-every", "2",
                                                    "--resume", dir + "/last.safetensors"});
  r = run_train(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(event_files(tb).size(), 2u);
  tags = tags_and_steps(tb);
  EXPECT_EQ(tags["START"], std::vector<std::int64_t>{10}) << "the second file starts after step 9";
  EXPECT_EQ(tags["train/loss"], (std::vector<std::int64_t>{9, 18}));
  EXPECT_EQ(tags["train/step_loss"], (std::vector<std::int64_t>{2, 4, 6, 8, 10, 12, 14, 16, 18}));
  EXPECT_EQ(tags["train/samples"], std::vector<std::int64_t>{0}) << "drawn once, by the first run";
}

// The grid is what the model saw: with a flip-only augmentation (--augment flip-translate --translate 0) and
// seed 3, its pixels are those of the first batch the same sampler and flips give (built here with the
// data library), not the raw images of that batch.
TEST(CnnTrainObserve, TensorboardSampleGridIsTheFirstBatchAsAugmented) {
  const std::string root = testing::tiny_folder_dataset("observe_tb_augmented", 24);
  const std::string dir = testing::temp_dir("observe_tb_augmented_ckpt"), tb = dir + "/tensorboard";
  const testing::RunResult r = run_train(with_args(
      tiny_run(root, dir, 1), {"--augment", "flip-translate", "--translate", "0", "--tensorboard", tb}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string png;
  for (const std::string& f : event_files(tb)) {
    for (const std::string& record : tensorboard::read_event_records(f)) {
      tensorboard::Event e;
      ASSERT_TRUE(e.ParseFromString(record));
      for (const auto& v : e.summary().value())
        if (v.tag() == "train/samples") png = v.image().encoded_image_string();
    }
  }
  ASSERT_FALSE(png.empty()) << "no train/samples image in " << tb;
  const data::Image drawn = data::decode_image(
      std::span(reinterpret_cast<const std::uint8_t*>(png.data()), png.size()), "train/samples", 3);

  TrainConfig c;
  c.dataset = "folder:" + root;
  c.batch_size = 8;
  const TrainData d = load_train_data(c);
  auto first_batch_grid = [&](const data::TransformConfig& transform) {
    data::LoaderOptions o;
    o.batch_size = 8;
    o.transform = transform;
    data::Loader loader(d.train, data::DistributedSampler(d.train.size(), 1, 0, true, 3), o);
    loader.start_epoch(0);
    data::Batch b;
    EXPECT_TRUE(loader.next(b));
    return make_sample_grid(batch_as_dataset(b.images, b.labels, {}, {}, d.train.class_names), 4, 8);
  };
  const data::Image augmented = first_batch_grid(data::TransformConfig::flip_translate({}, {}, 3, 0));
  const data::Image raw = first_batch_grid(data::TransformConfig::eval({}, {}));
  ASSERT_NE(augmented.pixels, raw.pixels)
      << "no image of the first batch was mirrored: the test sees nothing";
  ASSERT_EQ(drawn.height, augmented.height);
  ASSERT_EQ(drawn.width, augmented.width);
  EXPECT_TRUE(drawn.pixels == augmented.pixels) << "the grid is not the augmented first batch";
  EXPECT_FALSE(drawn.pixels == raw.pixels) << "the grid shows the images before augmentation";
}

TEST(CnnTrainObserve, TensorBoardsOwnReaderReadsTheRun) {
  SKIP_WITHOUT_PYTHON_MODULES("tensorboard.backend.event_processing.event_accumulator");
  const std::string root = testing::tiny_folder_dataset("observe_tb_reader", 24);
  const std::string dir = testing::temp_dir("observe_tb_reader_ckpt"), tb = dir + "/tensorboard";
  const testing::RunResult r = run_train(with_args(tiny_run(root, dir, 2), {"--tensorboard", tb}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string script = engine::testing::repo_root().string() + "/tests/python/read_tensorboard.py";
  const std::string out =
      engine::testing::command_output(engine::testing::pytorch_python() + " " + script + " " + tb);
  ASSERT_FALSE(out.empty()) << "TensorBoard's reader failed on " << tb;
  const nlohmann::json run = nlohmann::json::parse(out);
  ASSERT_EQ(run["scalars"]["test/accuracy"].size(), 2u) << out;
  EXPECT_EQ(run["scalars"]["test/accuracy"][1][0], 18);
  EXPECT_EQ(run["images"]["train/samples"].size(), 1u) << out;
  EXPECT_EQ(run["histograms"]["weights/features.0.weight"].size(), 2u) << out;
}
#endif

TEST(CnnTrainObserve, TraceHasEveryLayerInsideEachStepWithLossOptimizerAndDataWait) {
  const std::string root = testing::tiny_folder_dataset("observe_trace", 24);
  const std::string dir = testing::temp_dir("observe_trace_out"), path = dir + "/trace.json";
  const testing::RunResult r =
      run_train(with_args(tiny_run(root, dir, 1), {"--trace", path, "--trace-steps", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote a trace of 3 step(s) to " + path), std::string::npos) << r.output;
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<nlohmann::json> steps;
  std::map<std::string, std::set<std::string>> names;  // category -> names
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    names[e["cat"]].insert(e["name"].get<std::string>());
    if (e["cat"] == "step") steps.push_back(e);
  }
  ASSERT_EQ(steps.size(), 3u) << trace.dump(1);
  EXPECT_EQ(names["forward"], names["backward"]);
  EXPECT_TRUE(names["forward"].count("Conv2d 'features.0'")) << trace.dump(1);
  EXPECT_EQ(names["optimizer"].size(), 1u);
  EXPECT_EQ(names["data"].size(), 1u);
  EXPECT_EQ(names["loss"].size(), 2u);  // forward and backward
  // Every compute span lies inside one of the steps.
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != 0 || e["cat"] == "step") continue;
    const double a = e["ts"], b = a + e["dur"].get<double>();
    bool inside = false;
    for (const auto& s : steps) {
      const double sa = s["ts"], sb = sa + s["dur"].get<double>();
      inside = inside || (a >= sa - 0.01 && b <= sb + 0.01);
    }
    EXPECT_TRUE(inside) << e.dump();
  }
}

// Two ranks through gloo, small buckets: every traced step has each bucket's all-reduce on the communication
// track (a thread of its own), inside the step, after the backward of the layers it carries began; the PNG
// beside the trace draws them.
TEST(CnnTrainObserve, TwoRanksTraceEveryBucketsAllReduceOnTheCommunicationTrack) {
  const std::string root = testing::tiny_folder_dataset("observe_trace_ddp", 24);
  const std::string dir = testing::temp_dir("observe_trace_ddp_out"), path = dir + "/trace.json";
  const testing::RunResult r =
      run_train(with_args(tiny_run(root, dir, 1),
                          {"--nproc", "2", "--bucket-mb", "0.001", "--trace", path, "--trace-steps", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t at = r.output.find(" gradient buckets (");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::size_t buckets = std::stoul(r.output.substr(r.output.rfind(' ', at - 1) + 1));
  ASSERT_GE(buckets, 3u) << r.output;
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<trace::Span> spans;
  std::map<int, std::string> threads;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      threads[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X") continue;
    trace::Span s{e["name"].get<std::string>(),
                  e["cat"].get<std::string>(),
                  static_cast<trace::Track>(e["tid"].get<int>()),
                  e["ts"].get<double>(),
                  e["dur"].get<double>(),
                  {}};
    if (e.contains("args"))
      for (const auto& [key, value] : e["args"].items()) s.args.emplace_back(key, value.get<std::string>());
    spans.push_back(s);
  }
  EXPECT_EQ(threads[static_cast<int>(trace::Track::kCommunication)], "communication (gradient all-reduce)");
  EXPECT_NE(threads[static_cast<int>(trace::Track::kCompute)],
            threads[static_cast<int>(trace::Track::kCommunication)]);
  engine::testing::expect_all_reduces_in_every_step(spans, buckets, 3, 0.002);
  if (find_gnuplot().empty())
    GTEST_SKIP() << "the trace passed; gnuplot (Debian's gnuplot-nox) draws its PNG";
  const std::string png = testing::file_bytes(dir + "/trace.png");
  ASSERT_GT(png.size(), 1000u) << r.output;
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST(CnnTrainObserve, ConfusionMatrixAndMisclassifiedImagesAfterTraining) {
  const std::string root = testing::tiny_folder_dataset("observe_pictures", 24);
  const std::string dir = testing::temp_dir("observe_pictures_out");
  const testing::RunResult r =
      run_train(with_args(tiny_run(root, dir, 1), {"--confusion", dir + "/confusion.png", "--misclassified",
                                                   dir + "/wrong.png", "--metrics", dir + "/m.jsonl"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote the confusion matrix ("), std::string::npos) << r.output;
  const std::string png = testing::file_bytes(dir + "/confusion.png");
  ASSERT_GT(png.size(), 1000u) << r.output;
  EXPECT_EQ(png.substr(1, 3), "PNG");
  // The misclassified sheet exists exactly when the log says some test image was wrong.
  EXPECT_EQ(std::filesystem::exists(dir + "/wrong.png"),
            r.output.find("misclassified test image(s)") != std::string::npos)
      << r.output;
  std::ifstream metrics(dir + "/m.jsonl");
  std::string line, last;
  while (std::getline(metrics, line)) last = line;
  const nlohmann::json m = nlohmann::json::parse(last);
  ASSERT_TRUE(m.contains("confusion_matrix")) << last;
  std::int64_t total = 0;
  for (const auto& row : m["confusion_matrix"]["counts"])
    for (const auto& n : row) total += n.get<std::int64_t>();
  EXPECT_EQ(total, 12);  // the 12 test images, each once
  EXPECT_EQ(m["confusion_matrix"]["classes"], nlohmann::json({"class_a", "class_b", "class_c"}));
}

TEST(CnnTrainObserve, BadFlagsAreRefusedByName) {
  const std::string root = testing::tiny_folder_dataset("observe_bad");
  const std::string dir = testing::temp_dir("observe_bad_out");
  testing::RunResult r = run_train(with_args(tiny_run(root, dir, 1), {"--confusion", dir + "/c.jpg"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--confusion '" + dir + "/c.jpg': the file name must end in .png"),
            std::string::npos)
      << r.output;
  r = run_train(with_args(tiny_run(root, dir, 1), {"--trace", dir + "/t.txt"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--trace '" + dir + "/t.txt': the file name must end in .json"), std::string::npos)
      << r.output;
  r = run_train(with_args(tiny_run(root, dir, 1), {"--confusion", dir + "/c.png", "--nproc", "2"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--confusion and --misclassified need one process"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace engine::apps
