// cnn_predict says what it converted (issue 28, defect 6): an image that is not the model's input as it is
// (another size, colour for a grey model, grey for a colour one, transparency) is converted as before, and a
// note on stderr names the file, its size and channels, the model's, and each change; an image that is the
// model's input gets no note. Before, the conversion was silent.

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/image_codec.h"
#include "tests/cpu/cnn_train_test_util.h"

namespace engine::apps {
namespace {

using testing::run_program;
using testing::run_train;

// A `channels` x size x size PNG of a mid grey ramp, written to `path`.
std::string write_image(const std::string& path, int channels, int size) {
  data::Image image{channels, size, size,
                    std::vector<std::uint8_t>(static_cast<std::size_t>(channels * size * size))};
  for (std::size_t i = 0; i < image.pixels.size(); ++i)
    image.pixels[i] = static_cast<std::uint8_t>(60 + i % 120);
  data::write_png(path, image);
  return path;
}

TEST(CnnPredict, SaysWhatItConvertedToTheModelsInput) {
  const std::string root = testing::tiny_folder_dataset("predict_note");
  const std::string dir = testing::temp_dir("predict_note_out");
  // --resize 32: the checkpoint's evaluation transform (Resize(32) + CenterCrop(32), issue 42) leaves a
  // 32x32 image as it is.
  const testing::RunResult train = run_train(
      testing::with_args({"--cpu", "--resize", "32"}, testing::tiny_folder_args(root, dir, "cnn3", 8, 1)));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string checkpoint = dir + "/last.safetensors";  // cnn3 on 3x32x32
  const std::string small = root + "/test/class_b/0.png";    // the dataset's own 8x8 RGB
  const std::string grey = write_image(dir + "/grey.png", 1, 32);
  const std::string rgba = write_image(dir + "/rgba.png", 4, 32);
  const std::string exact = write_image(dir + "/exact.png", 3, 32);
  const testing::RunResult r =
      run_program("cnn_predict", {"--checkpoint", checkpoint, small, grey, rgba, exact});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cnn_predict: note: " + small +
                          " is 8x8 RGB; the model takes 32x32 RGB: converted "
                          "(Resize(32) + CenterCrop(32), the checkpoint's evaluation transform)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(grey + " is 32x32 grey; the model takes 32x32 RGB: converted (grey copied to the "
                                 "colour channels)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find(rgba + " is 32x32 RGBA; the model takes 32x32 RGB: converted (transparency dropped)\n"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(exact + " is"), std::string::npos) << "the model's input as it is:\n" << r.output;
  EXPECT_EQ(testing::count_of(r.output, "cnn_predict: note: "), 3u) << r.output;
  EXPECT_NE(r.output.find(exact + "\n"), std::string::npos) << "every image is still classified\n"
                                                            << r.output;
}

// The case: a 32x32 colour image given to a model of Fashion-MNIST's 28x28 grey images.
TEST(CnnPredict, SaysAColourImageWasResizedAndGreyedForAGreyModel) {
  const std::string fashion = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(fashion + "/t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "needs Debian's dataset-fashion-mnist in " << fashion;
  const std::string dir = testing::temp_dir("predict_grey_out");
  const testing::RunResult train =
      run_train({"--cpu", "--dataset", "fashion-mnist", "--data-dir", fashion, "--limit-train", "64",
                 "--limit-test", "32", "--epochs", "1", "--checkpoint-dir", dir});
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string colour = write_image(dir + "/colour.png", 3, 32);
  const testing::RunResult r =
      run_program("cnn_predict", {"--checkpoint", dir + "/last.safetensors", colour});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(colour + " is 32x32 RGB; the model takes 28x28 grey: converted (resized, colour to "
                                   "grey)\n"),
            std::string::npos)
      << r.output;
}

// --classes naming another number of classes than the checkpoint's: refused naming both counts (it used to
// surface as the last layer's weight shape, "tensor 'fc.weight' has shape [3, ...]").
TEST(CnnPredict, ClassNamesOfAnotherCountAreRefusedNamingBothCounts) {
  const std::string root = testing::tiny_folder_dataset("predict_classes");
  const std::string dir = testing::temp_dir("predict_classes_out");
  const testing::RunResult train =
      run_train(testing::with_args({"--cpu"}, testing::tiny_folder_args(root, dir, "cnn3", 8, 1)));
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string checkpoint = dir + "/last.safetensors";
  const std::string image = root + "/test/class_b/0.png";
  const testing::RunResult r =
      run_program("cnn_predict", {"--checkpoint", checkpoint, "--classes", "cat,dog", image});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--classes 'cat,dog' names 2 classes; checkpoint '" + checkpoint +
                          "' was trained on 3 (class_a, class_b, class_c)"),
            std::string::npos)
      << r.output;
  const testing::RunResult renamed =
      run_program("cnn_predict", {"--checkpoint", checkpoint, "--classes", "cat,dog,emu", image});
  EXPECT_EQ(renamed.exit_code, 0) << renamed.output;
}

}  // namespace
}  // namespace engine::apps
