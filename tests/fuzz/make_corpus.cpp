// Writes the seed corpus under tests/fuzz/corpus/<target>/: tiny valid files and a few broken ones per
// reader. The output is checked in; run `fuzz_make_corpus tests/fuzz/corpus` after changing this file. Files
// named regression_* there are inputs the fuzzers once crashed on (kept by hand, not written here).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "data/gzip.h"
#include "data/image_codec.h"
#include "optim/safetensors.h"

namespace {

using Bytes = std::vector<std::uint8_t>;
using engine::data::Image;

void write(const std::filesystem::path& path, const Bytes& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) ||
      std::fclose(f) != 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

Bytes cifar_records(const std::vector<std::uint8_t>& labels) {
  Bytes out;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    out.push_back(labels[r]);
    for (int i = 0; i < 3072; ++i) out.push_back(static_cast<std::uint8_t>(i * 13 + r));
  }
  return out;
}

void put_be32(Bytes& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

Bytes read_back(const std::filesystem::path& path) {
  Bytes bytes(std::filesystem::file_size(path));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr || std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::exit(1);
  std::fclose(f);
  return bytes;
}

// A one-member ustar archive (what `tar --format=ustar` writes).
Bytes tar_of(const std::string& name, const Bytes& data) {
  Bytes h(512, 0);
  std::snprintf(reinterpret_cast<char*>(h.data()), 100, "%s", name.c_str());
  std::snprintf(reinterpret_cast<char*>(h.data()) + 100, 8, "%07o", 0644);
  std::snprintf(reinterpret_cast<char*>(h.data()) + 124, 12, "%011zo", data.size());
  h[156] = '0';
  std::snprintf(reinterpret_cast<char*>(h.data()) + 257, 8, "ustar");
  h[263] = '0';
  h[264] = '0';
  unsigned sum = 8 * ' ';
  for (std::size_t i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? 0 : h[i];
  std::snprintf(reinterpret_cast<char*>(h.data()) + 148, 8, "%06o", sum);
  h[155] = ' ';
  Bytes out = h;
  out.insert(out.end(), data.begin(), data.end());
  out.resize((out.size() + 511) / 512 * 512 + 1024, 0);
  return out;
}

Bytes idx_pair(std::uint32_t n, std::uint32_t rows, std::uint32_t cols, std::uint32_t labels) {
  Bytes images;
  put_be32(images, 2051);
  put_be32(images, n);
  put_be32(images, rows);
  put_be32(images, cols);
  for (std::uint32_t i = 0; i < n * rows * cols; ++i) images.push_back(static_cast<std::uint8_t>(i * 7));
  Bytes lab;
  put_be32(lab, 2049);
  put_be32(lab, labels);
  for (std::uint32_t i = 0; i < labels; ++i) lab.push_back(static_cast<std::uint8_t>(i % 10));
  Bytes out;
  const auto len = static_cast<std::uint32_t>(images.size());
  for (int s = 0; s < 32; s += 8) out.push_back(static_cast<std::uint8_t>(len >> s));  // little-endian split
  out.insert(out.end(), images.begin(), images.end());
  out.insert(out.end(), lab.begin(), lab.end());
  return out;
}

Image pattern(std::int64_t c, std::int64_t h, std::int64_t w) {
  Image im{c, h, w, {}};
  for (std::int64_t i = 0; i < c * h * w; ++i) im.pixels.push_back(static_cast<std::uint8_t>(i * 29));
  return im;
}

Bytes cut(Bytes b, std::size_t n) {
  b.resize(n);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path out(argv[1]);
  using engine::data::gzip_compress;

  const Bytes one = cifar_records({3});
  write(out / "cifar10/one_record.bin", one);
  write(out / "cifar10/bad_label.bin", cifar_records({1, 12}));
  write(out / "cifar10/short.bin", cut(one, 100));
  write(out / "cifar10/test_batch.tar", tar_of("cifar-10-batches-bin/test_batch.bin", one));
  write(out / "cifar10/meta.txt", {'a',  '\n', 'b',  '\n', 'c',  '\n', 'd',  '\n', 'e',  '\n', 'f',
                                   '\n', 'g',  '\n', 'h',  '\n', 'i',  '\n', 'j',  '\n', '\n'});

  write(out / "idx/pair.idx", idx_pair(2, 3, 3, 2));
  write(out / "idx/count_mismatch.idx", idx_pair(2, 3, 3, 1));
  Bytes wrong_magic = idx_pair(1, 2, 2, 1);
  wrong_magic[4 + 3] = 2;
  write(out / "idx/wrong_dims.idx", wrong_magic);

  const Bytes gz = gzip_compress(one, 9);
  write(out / "gzip/record.bin.gz", gz);
  write(out / "gzip/truncated.gz", cut(gz, gz.size() / 2));
  Bytes two = gzip_compress(Bytes(10, 'a'));
  const Bytes second = gzip_compress(Bytes(5, 'b'));
  two.insert(two.end(), second.begin(), second.end());
  write(out / "gzip/two_members.gz", two);
  write(out / "gzip/not_gzip.gz", {'h', 'e', 'l', 'l', 'o'});

  using engine::data::encode_bmp;
  using engine::data::encode_jpeg;
  using engine::data::encode_png;
  write(out / "image/rgb.png", encode_png(pattern(3, 4, 4)));
  write(out / "image/grey.png", encode_png(pattern(1, 3, 5)));
  write(out / "image/rgba.png", encode_png(pattern(4, 2, 2)));
  write(out / "image/rgb.bmp", encode_bmp(pattern(3, 3, 4)));
  write(out / "image/rgb.jpg", encode_jpeg(pattern(3, 8, 8), 80));
  const Bytes png = encode_png(pattern(3, 4, 4));
  write(out / "image/truncated.png", cut(png, png.size() / 2));
  // safetensors: a checkpoint-like file (metadata, an F32 matrix, a 0-dim I64) and a truncated copy.
  const std::vector<float> weights = {0.5F, -1.0F, 2.0F, 0.25F, 3.0F, -0.5F};
  const std::int64_t counter = 7;
  const std::vector<engine::optim::TensorRecord> records = {
      {"0.weight", "F32", {2, 3}, {reinterpret_cast<const std::uint8_t*>(weights.data()), 24}},
      {"1.num_batches_tracked", "I64", {}, {reinterpret_cast<const std::uint8_t*>(&counter), 8}}};
  const auto st = out / "safetensors/small.safetensors";
  std::filesystem::create_directories(st.parent_path());
  engine::optim::write_safetensors(st.string(), records,
                                   {{"format", "cnn_engine.checkpoint.v1"}, {"epoch", "1"}});
  const Bytes small = read_back(st);
  write(out / "safetensors/truncated.safetensors", cut(small, small.size() - 5));
  std::printf("corpus written to %s\n", out.c_str());
  return 0;
}
