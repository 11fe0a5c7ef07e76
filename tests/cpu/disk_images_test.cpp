// Folder datasets read from disk (data/disk_images.h, data/file_list.h): indexing and its refusals, the test
// split's classes matched to the training split's by name (issue 44, defect 1), determinism of decode +
// augment across worker counts, bad images during an epoch (stop, or skip and count), torchvision's
// geometry, and memory that does not grow with the dataset.

#include "data/disk_images.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "data/augment_params.h"
#include "data/file_io.h"
#include "data/file_list.h"
#include "data/image_codec.h"
#include "data/loader.h"
#include "data/resample.h"
#include "tests/common/image_trees.h"
#include "tests/cpu/data_test_util.h"

namespace engine::data {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

using engine::testing::make_image_tree;

// Every batch of one epoch, images and labels.
std::vector<float> epoch_values(const Dataset& d, int workers, std::uint64_t epoch, int world = 1,
                                int rank = 0) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = workers;
  o.prefetch_depth = 3;
  o.transform = TransformConfig::eval({0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f});
  o.transform.random_flip = true;
  o.transform.seed = 9;
  Loader loader(d, DistributedSampler(d.size(), world, rank, true, 9), o);
  loader.start_epoch(epoch);
  std::vector<float> out;
  for (Batch b; loader.next(b);) {
    out.insert(out.end(), b.images.data<float>(), b.images.data<float>() + b.images.numel());
    for (std::int64_t i = 0; i < b.size(); ++i)
      out.push_back(static_cast<float>(b.labels.data<std::int32_t>()[i]));
  }
  return out;
}

TEST(DiskImages, IndexesWithoutDecodingAndReadsEachSampleAtTheCropSize) {
  TempDir tmp;
  make_image_tree(tmp / "train", {"cat", "dog"}, 5);
  testing::write_text(tmp / "train/cat/notes.txt", "ignored: not an image name");
  const FileList list = index_image_folder(tmp / "train");
  ASSERT_EQ(list.files.size(), 10u);
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(list.labels.front(), 0);
  EXPECT_EQ(list.labels.back(), 1);
  DiskImageOptions o;
  o.image_size = 48;
  const Dataset d = disk_image_dataset(list, o);
  EXPECT_TRUE(d.on_disk());
  EXPECT_TRUE(d.images.empty());
  EXPECT_EQ(d.height, 48);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(d.image_bytes()));
  for (std::int64_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(read_sample(d, i, 0, pixels.data()), d.labels[static_cast<std::size_t>(i)]);
  }
}

TEST(DiskImages, TestClassesAreMatchedToTrainingClassesByName) {
  TempDir tmp;
  make_image_tree(tmp / "train", {"circle", "square", "triangle"}, 1);
  make_image_tree(tmp / "test", {"square", "triangle"}, 1);  // lacks circle: accepted, training's labels
  const FileList train = index_image_folder(tmp / "train");
  const FileList test = index_image_folder(tmp / "test", &train.class_names);
  EXPECT_EQ(test.class_names, train.class_names);
  EXPECT_EQ(test.labels, (std::vector<std::int32_t>{1, 2})) << "square is 1 and triangle 2, as in training";
  TempDir other;
  make_image_tree(other / "test", {"circle", "hexagon"},
                  1);  // a class training does not have: refused, named
  EXPECT_DATA_ERROR(index_image_folder(other / "test", &train.class_names), "hexagon",
                    "not one of the training split's classes", "circle, square, triangle");
}

TEST(DiskImages, FileListCsvReadsPathsRelativeToItsFolder) {
  TempDir tmp;
  make_image_tree(tmp / "imgs", {"a", "b"}, 2);
  testing::write_text(tmp / "train.csv", "path,label\nimgs/a/0.jpg,10\nimgs/b/1.png,2\nimgs/a/1.png,10\n");
  const FileList list = read_file_list(tmp / "train.csv");
  EXPECT_EQ(list.class_names, (std::vector<std::string>{"2", "10"})) << "integer names sorted as numbers";
  EXPECT_EQ(list.labels, (std::vector<std::int32_t>{1, 0, 1}));
  testing::write_text(tmp / "bad.csv", "imgs/a/0.jpg\n");
  EXPECT_DATA_ERROR(read_file_list(tmp / "bad.csv"), "bad.csv:1", "expected 'path,label'");
}

TEST(DiskImages, RefusesBadTreesNamingWhatIsWrong) {
  TempDir tmp;
  make_image_tree(tmp / "t", {"a"}, 1);
  fs::create_directories(tmp / "t/empty_class");
  EXPECT_DATA_ERROR(index_image_folder(tmp / "t"), "empty_class", "holds no .png");
  fs::remove(tmp / "t/empty_class");
  testing::write_text(tmp / "t/a/fake.jpg", "this is text");
  EXPECT_DATA_ERROR(index_image_folder(tmp / "t"), "fake.jpg", "not an image");
  fs::remove(tmp / "t/a/fake.jpg");
  fs::create_symlink(tmp / "t/loop", tmp / "t/loop");  // a symlink loop where a class folder would be
  EXPECT_DATA_ERROR(index_image_folder(tmp / "t"), "loop");
  fs::remove(tmp / "t/loop");
  fs::create_symlink(tmp / "t/a/gone.png", tmp / "t/a/link.png");
  EXPECT_DATA_ERROR(index_image_folder(tmp / "t"), "link.png", "no such file");
}

TEST(DiskImages, BadImageDuringAnEpochStopsNamingItOrIsSkippedAndCounted) {
  TempDir tmp;
  make_image_tree(tmp / "t", {"a", "b"}, 4);
  const FileList list = index_image_folder(tmp / "t");
  DiskImageOptions o;
  o.image_size = 32;
  const Dataset strict = disk_image_dataset(list, o);
  o.skip_bad_images = true;
  const Dataset lenient = disk_image_dataset(list, o);
  // After indexing: one file truncated, one deleted.
  const std::vector<std::uint8_t> whole = read_file(list.files[2]);
  testing::write_bytes(list.files[2],
                       std::vector<std::uint8_t>(
                           whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2)));
  fs::remove(list.files[5]);
  EXPECT_DATA_ERROR(epoch_values(strict, 2, 0), tmp / "t/");  // the first bad one the epoch meets
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(strict.image_bytes()));
  EXPECT_DATA_ERROR(read_sample(strict, 2, 0, pixels.data()), list.files[2], "truncated JPEG");
  EXPECT_DATA_ERROR(read_sample(strict, 5, 0, pixels.data()), list.files[5], "no such file");
  const auto values = epoch_values(lenient, 2, 0);
  EXPECT_EQ(lenient.source->skipped(), 2) << "each bad image once in the epoch";
  EXPECT_EQ(read_sample(lenient, 2, 0, pixels.data()), list.labels[3]) << "the next good sample stands in";
  EXPECT_EQ(epoch_values(lenient, 1, 0), values) << "the stand-ins do not depend on the worker count";
}

TEST(DiskImages, BatchesAreTheSameWhateverTheWorkerCountAndDifferByEpoch) {
  TempDir tmp;
  make_image_tree(tmp / "t", {"a", "b", "c"}, 5);
  DiskImageOptions o;
  o.image_size = 40;
  o.random_resized_crop = true;
  o.seed = 9;
  const Dataset d = disk_image_dataset(index_image_folder(tmp / "t"), o);
  const auto one = epoch_values(d, 1, 3);
  EXPECT_EQ(epoch_values(d, 3, 3), one);
  EXPECT_NE(epoch_values(d, 1, 4), one) << "another epoch draws other crops";
  // Two ranks together see each sample as one rank does (the draws are keyed by sample index).
  std::vector<std::uint8_t> a(static_cast<std::size_t>(d.image_bytes())), b(a.size());
  read_sample(d, 7, 3, a.data());
  read_sample(d, 7, 3, b.data());
  EXPECT_EQ(a, b);
}

TEST(DiskImages, RandomResizedCropBoxesFollowTorchvisionsLaw) {
  // The boxes fit, their area fraction lies in [0.08, 1] (up to rounding) and their ratio in [3/4, 4/3],
  // over many draws; a degenerate image falls back to the central crop.
  double min_area = 1, max_area = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    const CropBox b = random_resized_crop_box(375, 500, 0.08, 1.0, 0.75, 4.0 / 3.0, 5, 1, i);
    ASSERT_TRUE(b.top >= 0 && b.left >= 0 && b.top + b.height <= 375 && b.left + b.width <= 500);
    const double area = static_cast<double>(b.height * b.width) / (375.0 * 500.0);
    min_area = std::min(min_area, area);
    max_area = std::max(max_area, area);
    const double ratio = static_cast<double>(b.width) / static_cast<double>(b.height);
    EXPECT_GT(ratio, 0.75 * 0.9);
    EXPECT_LT(ratio, 4.0 / 3.0 * 1.1);
  }
  EXPECT_LT(min_area, 0.1);
  EXPECT_GT(max_area, 0.8);
  const CropBox thin = random_resized_crop_box(10, 1000, 0.9, 1.0, 0.75, 4.0 / 3.0, 5, 1, 0);
  EXPECT_EQ(thin.height, 10);
  EXPECT_EQ(thin.width, 13);  // round(10 * 4/3)
  EXPECT_EQ(thin.left, (1000 - 13) / 2);
}

TEST(DiskImages, ResizeShapesAndCenterCropAreTorchvisions) {
  const PixelBox s = resized_shape(375, 500, 73);
  EXPECT_EQ(s.height, 73);
  EXPECT_EQ(s.width, 97);  // int(73 * 500 / 375) = int(97.33)
  EXPECT_EQ(default_resize(224), 256);
  const PixelBox c = center_crop_box(73, 97, 64);
  EXPECT_EQ(c.top, 4);    // round(4.5) = 4, half to even
  EXPECT_EQ(c.left, 16);  // round(16.5) = 16
}

TEST(DiskImages, ResampleKeepsFlatImagesFlatAndIsIdentityAtTheSameSize) {
  std::vector<std::uint8_t> src(37 * 53 * 3);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>((i * 31) % 251);
  std::vector<std::uint8_t> same(src.size());
  resample_bilinear(src.data(), 53 * 3, 3, 37, 53, 37, 53, {0, 0, 37, 53}, same.data());
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 37 * 53; ++p)
      ASSERT_EQ(same[static_cast<std::size_t>(c * 37 * 53 + p)], src[static_cast<std::size_t>(p * 3 + c)]);
  }
  std::vector<std::uint8_t> flat(200 * 300 * 3, 77), out(3 * 24 * 24);
  resample_bilinear(flat.data(), 300 * 3, 3, 200, 300, 31, 47, {3, 9, 24, 24}, out.data());
  for (const auto v : out) ASSERT_EQ(v, 77);  // weights sum to one in the fixed point too
}

// Peak RSS (KiB) of a child process that indexes `root` and reads one epoch through the loader (2
// workers, prefetch 3, batches of 4), or -1.
long child_peak_rss_kib(const std::string& root, std::int64_t count) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    long kib = -1;
    try {
      DiskImageOptions o;
      o.image_size = 32;
      const Dataset d = disk_image_dataset(index_image_folder(root), o);
      LoaderOptions lo;
      lo.batch_size = 4;
      lo.num_workers = 2;
      lo.prefetch_depth = 3;
      Loader loader(d, DistributedSampler(d.size(), 1, 0, true, 1), lo);
      std::int64_t seen = 0;
      for (Batch b; loader.next(b);) seen += b.size();
      struct rusage u {};
      ::getrusage(RUSAGE_SELF, &u);
      if (seen == count) kib = u.ru_maxrss;
    } catch (...) {
    }
    (void)!::write(fds[1], &kib, sizeof kib);
    ::_exit(0);
  }
  ::close(fds[1]);
  long kib = -1;
  if (::read(fds[0], &kib, sizeof kib) != static_cast<ssize_t>(sizeof kib)) kib = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return kib;
}

// root/<10 classes>/<k>.png: `count` entries, links to 20 real 64x64 pictures (writing 20,000 files would
// take the test's time, and the loader reads each link as a file).
void make_linked_tree(const std::string& root, int count) {
  for (int k = 0; k < 20; ++k) {
    testing::write_bytes(fmt::format("{}/pool/{}.png", root, k),
                         encode_png(engine::testing::class_picture(64, 64, k, k)));
  }
  for (int i = 0; i < count; ++i) {
    const fs::path dir = fs::path(root) / "tree" / fmt::format("c{}", i % 10);
    fs::create_directories(dir);
    fs::create_symlink(fs::path(root) / "pool" / fmt::format("{}.png", i % 20),
                       dir / fmt::format("{}.png", i));
  }
}

TEST(DiskImages, MemoryDoesNotGrowWithTheDataset) {
  TempDir small, large;
  make_linked_tree(small.str(), 2000);
  make_linked_tree(large.str(), 20000);
  const long a = child_peak_rss_kib(small / "tree", 2000), b = child_peak_rss_kib(large / "tree", 20000);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  std::printf("peak RSS: %ld KiB for 2,000 images, %ld KiB for 20,000\n", a, b);
  // The index holds a path and a label per image (about 100 bytes: 1.8 MB more for 18,000 more images);
  // pixels exist only for the batches in flight. An in-memory 32x32 copy would add 55 MB.
  EXPECT_LT(b - a, 4 * 1024) << "peak RSS " << a << " KiB for 2,000 images, " << b << " KiB for 20,000";
}

}  // namespace
}  // namespace engine::data
