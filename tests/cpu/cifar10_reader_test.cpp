// CIFAR-10 reader on small batches the tests write themselves: exact labels and pixels from raw, gzipped and
// tarred batches, and an engine::Error naming the file for every malformed input.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "data/cifar10.h"
#include "data/file_io.h"
#include "data/gzip.h"
#include "tests/cpu/data_test_util.h"

namespace engine::data {
namespace {

using testing::TempDir;
using testing::write_bytes;
using testing::write_text;

// The pixel a test record holds at channel c, row y, column x.
std::uint8_t pixel(int record, int c, int y, int x) {
  return static_cast<std::uint8_t>(record * 7 + c * 50 + y * 3 + x);
}

std::vector<std::uint8_t> make_batch(const std::vector<int>& labels, int first_record = 0) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(static_cast<std::uint8_t>(labels[r]));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) bytes.push_back(pixel(first_record + static_cast<int>(r), c, y, x));
  }
  return bytes;
}

void expect_record(const Dataset& d, int index, int record, int label) {
  ASSERT_LT(index, d.size());
  EXPECT_EQ(d.labels[static_cast<std::size_t>(index)], label) << "sample " << index;
  const std::uint8_t* im = d.image(index);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; y += 7)
      for (int x = 0; x < 32; x += 5) {
        ASSERT_EQ(im[(c * 32 + y) * 32 + x], pixel(record, c, y, x))
            << "sample " << index << " c" << c << " y" << y;
      }
}

// A batches folder: data_batch_k holds records 3k-3..3k-1 (labels k-1, k, k+1 mod 10); odd batches gzipped.
void write_batches_folder(const std::string& dir) {
  for (int k = 1; k <= 5; ++k) {
    const auto batch = make_batch({(k - 1) % 10, k % 10, (k + 1) % 10}, 3 * (k - 1));
    const std::string name = dir + "/data_batch_" + std::to_string(k) + ".bin";
    if (k % 2 == 1) {
      write_bytes(name + ".gz", gzip_compress(batch));
    } else {
      write_bytes(name, batch);
    }
  }
  write_bytes(dir + "/test_batch.bin.gz", gzip_compress(make_batch({9, 0, 5}, 100)));
}

TEST(Cifar10Reader, DecodesBatchBytesExactly) {
  const Dataset d = decode_cifar10_batch(make_batch({3, 8, 0}), "mem.bin");
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.channels, 3);
  EXPECT_EQ(d.height, 32);
  EXPECT_EQ(d.width, 32);
  EXPECT_EQ(d.images.size(), 3u * 3072u);
  EXPECT_EQ(d.class_names, cifar10_class_names());
  EXPECT_EQ(d.class_names[3], "cat");
  expect_record(d, 0, 0, 3);
  expect_record(d, 1, 1, 8);
  expect_record(d, 2, 2, 0);
  // The planes are R, G, B in that order: the first byte after the label is R of pixel (0,0).
  EXPECT_EQ(d.image(1)[0], pixel(1, 0, 0, 0));
  EXPECT_EQ(d.image(1)[1024], pixel(1, 1, 0, 0));
  EXPECT_EQ(d.image(1)[2048 + 32 * 31 + 31], pixel(1, 2, 31, 31));
}

TEST(Cifar10Reader, LoadsRawAndGzippedBatchesFromEitherFolder) {
  TempDir tmp;
  const std::string batches = tmp / "cifar-10-batches-bin";
  write_batches_folder(batches);
  for (const std::string& root : {tmp.str(), batches}) {
    const Dataset train = load_cifar10(root, Split::Train);
    ASSERT_EQ(train.size(), 15) << root;
    for (int k = 1; k <= 5; ++k) {
      for (int j = 0; j < 3; ++j) expect_record(train, 3 * (k - 1) + j, 3 * (k - 1) + j, (k - 1 + j) % 10);
    }
    const Dataset test = load_cifar10(root, Split::Test);
    ASSERT_EQ(test.size(), 3);
    expect_record(test, 0, 100, 9);
    expect_record(test, 2, 102, 5);
  }
}

TEST(Cifar10Reader, UsesClassNamesFromBatchesMeta) {
  TempDir tmp;
  write_batches_folder(tmp.str());
  write_text(tmp / "batches.meta.txt", "a0\nb1\r\nc2\nd3\ne4\nf5\ng6\nh7\ni8\nj9\n\n");
  const Dataset d = load_cifar10(tmp.str(), Split::Test);
  ASSERT_EQ(d.num_classes(), 10);
  EXPECT_EQ(d.class_names[1], "b1");
  EXPECT_EQ(d.class_names[9], "j9");

  write_text(tmp / "batches.meta.txt", "only\nnine\nnames\n4\n5\n6\n7\n8\n9\n");
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Test), "batches.meta.txt", "9 class names, expected 10");
}

// The official tarball layout, made with the system's tar in ustar (GNU) and pax formats.
TEST(Cifar10Reader, ReadsTheTarGzDirectly) {
  if (std::system("tar --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no tar program to make an archive";
  TempDir tmp;
  const std::string src = tmp / "src";
  write_batches_folder(src + "/cifar-10-batches-bin");
  // The official tarball holds raw .bin files.
  for (int k = 1; k <= 5; k += 2) {
    const std::string name = src + "/cifar-10-batches-bin/data_batch_" + std::to_string(k) + ".bin";
    write_bytes(name, read_file_maybe_gzip(name + ".gz"));
    std::filesystem::remove(name + ".gz");
  }
  write_text(src + "/cifar-10-batches-bin/batches.meta.txt",
             "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\n"
             "horse\nship\ntruck\n\n");
  for (const std::string format : {"gnu", "pax"}) {
    const std::string tarball = tmp / (format + "/cifar-10-binary.tar.gz");
    std::filesystem::create_directories(tmp / format);
    const std::string cmd =
        "tar --format=" + format + " -czf " + tarball + " -C " + src + " cifar-10-batches-bin";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (const std::string& root : {tarball, tmp / format}) {  // the file, or the folder holding it
      const Dataset train = load_cifar10(root, Split::Train);
      ASSERT_EQ(train.size(), 15) << root;
      expect_record(train, 0, 0, 0);
      expect_record(train, 14, 14, 6);
      const Dataset test = load_cifar10(root, Split::Test);
      ASSERT_EQ(test.size(), 3);
      expect_record(test, 1, 101, 0);
    }
  }
  // An uncompressed tar is read as well.
  const std::string plain = tmp / "cifar-10-binary.tar";
  ASSERT_EQ(std::system(("tar -cf " + plain + " -C " + src + " cifar-10-batches-bin").c_str()), 0);
  expect_record(load_cifar10(plain, Split::Train), 7, 7, 3);
}

TEST(Cifar10Reader, RejectsSizeNotAMultipleOfTheRecord) {
  TempDir tmp;
  auto bytes = make_batch({1, 2});
  bytes.resize(bytes.size() - 5);
  write_bytes(tmp / "test_batch.bin", bytes);
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Test), "test_batch.bin", "6141 bytes",
                    "not a multiple of the 3073-byte");
}

TEST(Cifar10Reader, RejectsAnEmptyBatch) {
  TempDir tmp;
  write_bytes(tmp / "test_batch.bin", {});
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Test), "test_batch.bin", "empty");
}

TEST(Cifar10Reader, RejectsALabelOutside0To9NamingTheRecord) {
  TempDir tmp;
  write_bytes(tmp / "test_batch.bin", make_batch({1, 2, 10}));
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Test), "test_batch.bin", "record 2", "label 10",
                    "outside 0..9");
  EXPECT_DATA_ERROR(decode_cifar10_batch(make_batch({255}), "x.bin"), "x.bin", "record 0", "label 255");
}

TEST(Cifar10Reader, RejectsATruncatedGzip) {
  TempDir tmp;
  auto gz = gzip_compress(make_batch({1, 2, 3}));
  gz.resize(gz.size() / 2);
  write_bytes(tmp / "test_batch.bin.gz", gz);
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Test), "test_batch.bin.gz", "truncated gzip");
}

TEST(Cifar10Reader, RejectsAGzNameThatIsNotGzip) {
  TempDir tmp;
  write_bytes(tmp / "test_batch.bin.gz", make_batch({1, 2, 3}));
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Test), "test_batch.bin.gz", "not gzip");
}

TEST(Cifar10Reader, RejectsMissingPathsDirectoriesAndUnreadableFiles) {
  TempDir tmp;
  EXPECT_DATA_ERROR(load_cifar10(tmp / "nowhere", Split::Train), "nowhere", "does not exist");
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Train), tmp.str(), "cifar-10-batches-bin");
  write_batches_folder(tmp.str());
  std::filesystem::remove(tmp / "data_batch_4.bin");
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Train), "data_batch_4.bin");
  std::filesystem::create_directory(tmp / "data_batch_4.bin");
  EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Train), "data_batch_4.bin", "is a directory");
  // A file that opens but whose read fails (EIO), and a file without read permission (not for root).
  EXPECT_DATA_ERROR(load_cifar10("/proc/self/mem", Split::Train), "/proc/self/mem", "read failed");
  std::filesystem::remove(tmp / "data_batch_4.bin");
  write_bytes(tmp / "data_batch_4.bin", make_batch({1}));
  std::filesystem::permissions(tmp / "data_batch_4.bin", std::filesystem::perms::none);
  if (::geteuid() != 0) {
    EXPECT_DATA_ERROR(load_cifar10(tmp.str(), Split::Train), "data_batch_4.bin", "cannot open");
  }
}

TEST(Cifar10Reader, RejectsACorruptTarball) {
  TempDir tmp;
  std::vector<std::uint8_t> junk(2048, 'x');
  write_bytes(tmp / "cifar-10-binary.tar.gz", gzip_compress(junk));
  EXPECT_DATA_ERROR(load_cifar10(tmp / "cifar-10-binary.tar.gz", Split::Test), "cifar-10-binary.tar.gz",
                    "bad header checksum");
  write_bytes(tmp / "cifar-10-binary.tar.gz", junk);
  EXPECT_DATA_ERROR(load_cifar10(tmp / "cifar-10-binary.tar.gz", Split::Test), "cifar-10-binary.tar.gz",
                    "not gzip");
  // An empty archive (just the end marker): the batch is missing.
  write_bytes(tmp / "cifar-10-binary.tar.gz", gzip_compress(std::vector<std::uint8_t>(1024, 0)));
  EXPECT_DATA_ERROR(load_cifar10(tmp / "cifar-10-binary.tar.gz", Split::Test), "no test_batch.bin inside");
  // An empty file, compressed or not (a --data-dir naming a file by mistake): said so, not "no batch inside".
  write_bytes(tmp / "empty", {});
  EXPECT_DATA_ERROR(load_cifar10(tmp / "empty", Split::Test), "empty", "empty file: expected a folder");
  write_bytes(tmp / "cifar-10-binary.tar.gz", gzip_compress({}));
  EXPECT_DATA_ERROR(load_cifar10(tmp / "cifar-10-binary.tar.gz", Split::Test),
                    "empty file: expected a folder");
}

}  // namespace
}  // namespace engine::data
