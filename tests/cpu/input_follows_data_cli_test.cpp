// The model's input follows the data, through the programs (issue 42 item 4): a zoo model that cannot take
// --image-size is refused before training naming the sizes it takes, resnet18 trains at torchvision's stem
// from 128 pixels, an ONNX model's fixed height and width are refused against the data's (symbolic ones take
// the data's), and a checkpoint's evaluation transform (Resize + CenterCrop, normalization) is what
// cnn_train --eval-only and cnn_predict use. On the tiny folder dataset (8x8 PNGs, 3 classes).

#if ENGINE_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/image_codec.h"
#include "layers/onnx/onnx_model.h"
#include "optim/safetensors.h"
#include "tests/common/onnx_skip.h"
#include "tests/common/onnx_small_net.h"
#include "tests/common/scratch_dirs.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

// The ONNX file `from` with its input's height and width made symbolic ("H", "W"), written to `to`.
void write_with_symbolic_height_width(const std::string& from, const std::string& to) {
#if ENGINE_HAVE_ONNX
  ::onnx::ModelProto m;
  std::ifstream in(from, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&in)) << from;
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  ASSERT_EQ(shape->dim_size(), 4);
  shape->mutable_dim(2)->set_dim_param("H");
  shape->mutable_dim(3)->set_dim_param("W");
  std::ofstream out(to, std::ios::binary);
  ASSERT_TRUE(m.SerializeToOstream(&out)) << to;
#else
  FAIL() << "no ONNX in this build: " << from << " -> " << to;
#endif
}

// An RGB height x width PNG of a diagonal gradient, written to `path`; the path.
std::string write_gradient_png(const std::string& path, int height, int width) {
  data::Image image{3, height, width,
                    std::vector<std::uint8_t>(static_cast<std::size_t>(3 * height * width))};
  for (std::size_t i = 0; i < image.pixels.size(); ++i) {
    const auto p = static_cast<int>(i % static_cast<std::size_t>(height * width));
    image.pixels[i] =
        static_cast<std::uint8_t>((p / width * 5 + p % width * 3 + static_cast<int>(i) / 97) % 256);
  }
  data::write_png(path, image);
  return path;
}

using testing::run_program;
using testing::run_train;
using testing::with_args;

std::vector<std::string> folder_run(const std::string& root, const std::string& model,
                                    const std::string& size, const std::string& ckpt_dir) {
  return {"--cpu",        "--dataset", "folder:" + root,
          "--model",      model,       "--image-size",
          size,           "--epochs",  "1",
          "--batch-size", "4",         "--checkpoint-dir",
          ckpt_dir};
}

TEST(InputFollowsData, ZooModelThatCannotTakeTheSizeIsRefusedBeforeTraining) {
  const std::string root = testing::tiny_folder_dataset("follows_zoo", 4);
  const testing::RunResult r = run_train(folder_run(root, "vgg6", "64", ""));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("vgg6 does not accept 3x64x64 inputs (channels x height x width): it takes height "
                          "and width each 32 to 39 (folder datasets: --image-size)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Epoch 1 |"), std::string::npos) << "refused before training: " << r.output;
}

TEST(InputFollowsData, Resnet18TrainsWithTorchvisionsStemAt128) {
  const std::string root = testing::tiny_folder_dataset("follows_resnet", 2);
  const std::string dir = testing::temp_dir("follows_resnet_ck");
  const testing::RunResult r = run_train(
      with_args(folder_run(root, "resnet18", "128", dir), {"--limit-train", "4", "--limit-test", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Epoch 1 |"), std::string::npos) << r.output;
  const optim::SafetensorsFile ckpt = optim::SafetensorsFile::read(dir + "/last.safetensors");
  for (const auto& [name, shape] : {std::pair<std::string, Shape>{"conv1.weight", {64, 3, 7, 7}},
                                    {"layer2.0.downsample.0.weight", {128, 64, 1, 1}},
                                    {"fc.weight", {3, 512}}}) {
    const optim::SafetensorsFile::Entry* e = ckpt.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->shape, shape) << name;
  }
}

TEST(InputFollowsData, OnnxFixedSizeIsRefusedAndSymbolicSizeTakesTheDatas) {
  SKIP_WITHOUT_ONNX();
  const std::string root = testing::tiny_folder_dataset("follows_onnx", 4);
  const std::string files = testing::temp_dir("follows_onnx_files");
  const std::string fixed = engine::testing::small_net_onnx(files, 3);  // input [N, 3, 32, 32]
  const testing::RunResult r = run_train(folder_run(root, fixed, "48", ""));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("ONNX model '" + fixed +
                          "': its input 'input' takes samples [3, 32, 32] but the data gives [3, 48, 48] "
                          "(channels, height, width): its fixed height x width 32x32 is not the data's "
                          "48x48"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Epoch 1 |"), std::string::npos) << "refused before training: " << r.output;

  const std::string symbolic = files + "/symbolic.onnx";
  write_with_symbolic_height_width(fixed, symbolic);
  const testing::RunResult s = run_train(folder_run(root, symbolic, "16", ""));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("Epoch 1 |"), std::string::npos) << s.output;
}

// "Test Loss: L | Test Acc: A%" of the last line in `output` that has one.
std::string test_numbers(const std::string& output) {
  const std::size_t at = output.rfind("Test Loss: ");
  if (at == std::string::npos) return "(none)";
  return output.substr(at, output.find('%', at) + 1 - at);
}

TEST(InputFollowsData, EvalOnlyAndPredictUseTheCheckpointsEvaluationTransform) {
  const std::string root = testing::tiny_folder_dataset("follows_eval", 4);
  const std::string dir = testing::temp_dir("follows_eval_ck");
  // cnn3 takes 32 to 39: 36, with Resize(44), neither of them a default.
  const testing::RunResult train =
      run_train(with_args(folder_run(root, "cnn3", "36", dir), {"--resize", "44"}));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string checkpoint = dir + "/last.safetensors";
  const optim::SafetensorsFile file = optim::SafetensorsFile::read(checkpoint);
  const auto& meta = file.metadata();
  EXPECT_EQ(meta.at("eval_resize"), "44");
  EXPECT_EQ(meta.at("eval_crop"), "36");

  // Without flags: the checkpoint's 36 and 44 (the defaults, 32 and 37, would be refused or differ), the
  // same evaluation as the run's last epoch.
  const std::vector<std::string> eval = {"--cpu", "--dataset",   "folder:" + root, "--batch-size",
                                         "4",     "--eval-only", checkpoint};
  testing::RunResult r = run_train(eval);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test_numbers(r.output), test_numbers(train.output)) << r.output << "\n" << train.output;

  // An explicit --image-size that disagrees: refused naming both values.
  r = run_train(with_args(eval, {"--image-size", "32"}));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--eval-only: --image-size 32 disagrees with checkpoint '" + checkpoint +
                          "', whose model was evaluated on CenterCrop(36) after Resize(44)"),
            std::string::npos)
      << r.output;
  // An explicit --resize that disagrees wins, with a note naming both.
  r = run_train(with_args(eval, {"--resize", "60"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cnn_train: note: --eval-only: --resize 60 instead of checkpoint '" + checkpoint +
                          "''s Resize(44) before CenterCrop(36)"),
            std::string::npos)
      << r.output;

  // cnn_predict: a 40x24 picture through Resize(44) + CenterCrop(36), what the evaluation did.
  const std::string picture = write_gradient_png(dir + "/wide.png", 24, 40);
  r = run_program("cnn_predict", {"--checkpoint", checkpoint, picture});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(picture + " is 40x24 RGB; the model takes 36x36 RGB: converted (Resize(44) + "
                                    "CenterCrop(36), the checkpoint's evaluation transform)"),
            std::string::npos)
      << r.output;
}

// A learnable tree drawn at 64 to 100 pixels: class 0 horizontal stripes, 1 vertical, 2 a checkerboard, each
// of a random period (3 to 6 pixels) and two random colours; PNG and JPEG alternately. `per_class` images
// of each class in each split.
std::string stripes_tree(const std::string& name, int per_class) {
  const std::filesystem::path root = engine::testing::scratch_path("cnn_engine_", name);
  std::uint32_t state = 12345;
  const auto next = [&state](int n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<int>((state >> 8) % static_cast<std::uint32_t>(n));
  };
  for (const char* split : {"train", "test"}) {
    for (int c = 0; c < 3; ++c) {
      const std::filesystem::path dir = root / split / ("class" + std::to_string(c));
      std::filesystem::create_directories(dir);
      for (int i = 0; i < per_class; ++i) {
        const int h = 64 + next(37), w = 64 + next(37), period = 3 + next(4);
        int a[3], b[3];
        for (int k = 0; k < 3; ++k) {
          a[k] = next(100);
          b[k] = 155 + next(100);
        }
        data::Image image{3, h, w, std::vector<std::uint8_t>(static_cast<std::size_t>(3 * h * w))};
        for (int k = 0; k < 3; ++k) {
          for (int y = 0; y < h; ++y) {
            for (int x = 0; x < w; ++x) {
              const bool on = c == 0   ? (y / period) % 2 == 0
                              : c == 1 ? (x / period) % 2 == 0
                                       : ((y / period) + (x / period)) % 2 == 0;
              image.pixels[static_cast<std::size_t>((k * h + y) * w + x)] =
                  static_cast<std::uint8_t>(on ? a[k] : b[k]);
            }
          }
        }
        const bool jpeg = i % 2 == 1;
        const std::vector<std::uint8_t> bytes = jpeg ? data::encode_jpeg(image) : data::encode_png(image);
        std::ofstream out(dir / (std::to_string(i) + (jpeg ? ".jpg" : ".png")), std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      }
    }
  }
  return root.string();
}

// The "a small model trained at 64x64 learns": a small residual net (ONNX, symbolic height and width)
// on the stripes tree at --image-size 64 (Resize 73 + CenterCrop 64 for both splits: no augmentation), a few
// seconds of training; chance is 33%.
TEST(InputFollowsData, ASmallModelTrainedAt64Learns) {
  SKIP_WITHOUT_ONNX();
  const std::string root = stripes_tree("follows_learns", 24);
  const std::string files = testing::temp_dir("follows_learns_files");
  const std::string net = files + "/symbolic.onnx";
  write_with_symbolic_height_width(engine::testing::small_net_onnx(files, 3), net);
  const testing::RunResult r =
      run_train({"--cpu", "--dataset", "folder:" + root, "--model", net, "--image-size", "64", "--epochs",
                 "4", "--batch-size", "8", "--lr", "0.05", "--seed", "1", "--checkpoint-dir", ""});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t at = r.output.rfind("Test Acc: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const double accuracy = std::stod(r.output.substr(at + 10));
  EXPECT_GE(accuracy, 80.0) << r.output;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace engine::apps
