// The on-disk dataset's geometry against torchvision's on the same boxes (data/disk_images.h): a JPEG and a
// PNG through RandomResizedCrop's box and Resize + CenterCrop, byte for byte against F.resized_crop and
// F.resize + F.center_crop on the PIL image ImageFolder would load. Skips without PyTorch.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/augment_params.h"
#include "data/disk_images.h"
#include "data/file_io.h"
#include "data/file_list.h"
#include "data/image_codec.h"
#include "data/resample.h"
#include "tests/common/pytorch_tools.h"
#include "tests/cpu/data_test_util.h"

namespace engine::data {
namespace {

Image texture(int height, int width) {
  Image im{3, height, width, std::vector<std::uint8_t>(static_cast<std::size_t>(3 * height * width))};
  for (std::size_t i = 0; i < im.pixels.size(); ++i) {
    im.pixels[i] = static_cast<std::uint8_t>((i * 2654435761u >> 13) % 256 / 2 + (i % 97));
  }
  return im;
}

TEST(DiskImagesTorchvision, CropsAndResizesAreTorchvisionsByteForByte) {
  SKIP_WITHOUT_PYTHON_MODULES("torch", "torchvision", "PIL");
  testing::TempDir tmp;
  testing::write_bytes(tmp / "t/a/0.jpg", encode_jpeg(texture(375, 500), 90));
  testing::write_bytes(tmp / "t/a/1.png", encode_png(texture(97, 131)));
  const FileList list = index_image_folder(tmp / "t");
  // One Python run (importing torch takes seconds): per case, our bytes' file and the transform's call.
  std::ofstream script(tmp / "s.py");
  script << "import numpy, PIL.Image, torchvision.transforms.functional as F\n"
         << "B = F.InterpolationMode.BILINEAR\nbad = []\n"
         << "def check(path, ours, fn):\n"
         << "    img = fn(PIL.Image.open(path).convert('RGB'))\n"
         << "    theirs = numpy.asarray(img).transpose(2, 0, 1).tobytes()\n"
         << "    if theirs != open(ours, 'rb').read(): bad.append(ours)\n";
  int cases = 0;
  for (const bool train : {true, false}) {
    DiskImageOptions o;
    o.image_size = 64;
    o.random_resized_crop = train;
    o.seed = 4;
    o.dct_scaling = false;  // Pillow's bytes (DCT scaling trades them for speed)
    const Dataset d = disk_image_dataset(list, o);
    for (std::int64_t i = 0; i < 2; ++i) {
      const std::string& file = list.files[static_cast<std::size_t>(i)];
      const ImageInfo info = image_info(read_file(file), file);
      std::vector<std::uint8_t> ours(static_cast<std::size_t>(d.image_bytes()));
      read_sample(d, i, 2, ours.data());
      const std::string ours_path = tmp / ("ours" + std::to_string(cases++) + ".bin");
      testing::write_bytes(ours_path, ours);
      const CropBox box = random_resized_crop_box(info.height, info.width, 0.08, 1.0, 0.75, 4.0 / 3.0, 4, 2,
                                                  static_cast<std::uint64_t>(i));
      script << "check('" << file << "', '" << ours_path << "', lambda im: ";
      if (train) {
        script << "F.resized_crop(im, " << box.top << ", " << box.left << ", " << box.height << ", "
               << box.width << ", [64, 64], B))\n";
      } else {
        script << "F.center_crop(F.resize(im, 73, B), 64))\n";  // Resize(64 * 256/224 = 73)
      }
    }
  }
  script << "print('differ:', bad)\nraise SystemExit(1 if bad else 0)\n";
  script.close();
  const std::string command = engine::testing::pytorch_python() + " " + (tmp / "s.py");
  EXPECT_EQ(std::system(command.c_str()), 0) << command << ": our bytes differ from torchvision's";
}

}  // namespace
}  // namespace engine::data
