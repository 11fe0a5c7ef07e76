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
      const CropBox box = random_resized_crop_box(info.height, info.width, 0.08, 1.0, 0.75, 4.0 / 3.0, 4, 2,
                                                  static_cast<std::uint64_t>(i));
      const std::string out = tmp / "theirs.bin";
      std::ofstream script(tmp / "s.py");
      script << "import numpy, PIL.Image, torchvision.transforms.functional as F, sys\n"
             << "img = PIL.Image.open(sys.argv[1]).convert('RGB')\n";
      if (train) {
        script << "img = F.resized_crop(img, " << box.top << ", " << box.left << ", " << box.height << ", "
               << box.width << ", [64, 64], F.InterpolationMode.BILINEAR)\n";
      } else {
        script << "img = F.center_crop(F.resize(img, 73, F.InterpolationMode.BILINEAR), 64)\n";
      }
      script << "open(sys.argv[2], 'wb').write(numpy.asarray(img).transpose(2, 0, 1).tobytes())\n";
      script.close();
      const std::string command = engine::testing::pytorch_python() + " " + (tmp / "s.py") + " " + file + " " + out;
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      const std::vector<std::uint8_t> theirs = read_file(out);
      EXPECT_EQ(ours, theirs) << file << (train ? ": RandomResizedCrop" : ": Resize + CenterCrop");
    }
  }
}

}  // namespace
}  // namespace engine::data
