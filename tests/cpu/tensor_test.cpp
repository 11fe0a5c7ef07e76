// Tensor: shapes, views sharing storage, copies, and the errors misuse gets.
#include "core/tensor.h"

#include <gtest/gtest.h>

#include "core/allocator.h"

namespace engine {
namespace {

TEST(Tensor, ShapeNumelAndBytes) {
  Tensor t = Tensor::empty({3, 5, 7, 9}, DType::F32);
  EXPECT_EQ(t.ndim(), 4);
  EXPECT_EQ(t.numel(), 3 * 5 * 7 * 9);
  EXPECT_EQ(t.nbytes(), 3u * 5 * 7 * 9 * 4);
  EXPECT_EQ(t.dim(-1), 9);
  EXPECT_EQ(t.str(), "float32[3, 5, 7, 9] on cpu");
  EXPECT_TRUE(t.device().is_cpu());
  EXPECT_THROW((void)t.dim(4), Error);
}

TEST(Tensor, EveryDTypeHasItsSize) {
  EXPECT_EQ(Tensor::empty({2}, DType::F64).nbytes(), 16u);
  EXPECT_EQ(Tensor::empty({2}, DType::BF16).nbytes(), 4u);
  EXPECT_EQ(Tensor::empty({2}, DType::F16).nbytes(), 4u);
  EXPECT_EQ(Tensor::empty({2}, DType::I32).nbytes(), 8u);
  EXPECT_EQ(Tensor::empty({2}, DType::U8).nbytes(), 2u);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor flat = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {12});
  Tensor m = flat.view({3, 4});
  Tensor rows = m.slice(1, 3);
  Tensor part = flat.flat_range(5, {2, 3});
  EXPECT_TRUE(rows.shares_storage_with(flat));
  EXPECT_TRUE(part.shares_storage_with(flat));
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_EQ(rows.data<float>()[0], 4.0f);
  EXPECT_EQ(part.data<float>()[0], 5.0f);
  part.data<float>()[1] = 100.0f;  // writes through to the flat buffer
  EXPECT_EQ(flat.data<float>()[6], 100.0f);
  EXPECT_EQ(rows.data<float>()[2], 100.0f);
}

TEST(Tensor, MisuseThrowsWithTheShapes) {
  Tensor t = Tensor::empty({3, 4}, DType::F32);
  EXPECT_THROW((void)t.view({5, 3}), Error);
  EXPECT_THROW((void)t.slice(2, 5), Error);
  EXPECT_THROW((void)t.flat_range(10, {3}), Error);
  EXPECT_THROW((void)t.data<double>(), Error);
  EXPECT_THROW((void)Tensor::empty({2, -1}, DType::F32), Error);
  try {
    (void)t.view({5, 3});
    FAIL() << "view to a wrong size did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float32[3, 4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor.cpp"), std::string::npos) << e.what();
  }
}

TEST(Tensor, CopyAndPoison) {
  Tensor a = Tensor::from_vector<double>({1.5, -2.0, 3.25}, {3});
  Tensor b = Tensor::empty({3}, DType::F64);
  b.fill_bytes(0xFF);
  EXPECT_TRUE(std::isnan(b.data<double>()[0]));
  b.copy_from(a);
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.5, -2.0, 3.25}));
  Tensor c = a.to(Device::cpu());
  EXPECT_FALSE(c.shares_storage_with(a));
  EXPECT_EQ(c.to_vector<double>(), a.to_vector<double>());
  EXPECT_THROW(b.copy_from(Tensor::empty({4}, DType::F64)), Error);
  EXPECT_THROW(b.copy_from(Tensor::empty({3}, DType::F32)), Error);
}

TEST(Tensor, ZerosAreZero) {
  Tensor z = Tensor::zeros({5, 7}, DType::F32);
  for (float v : z.to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Tensor, StorageReturnsToTheAllocator) {
  const std::size_t before = cpu_allocator().stats().bytes_in_use;
  {
    Tensor t = Tensor::empty({1000}, DType::F32);
    Tensor v = t.view({10, 100});
    EXPECT_GE(cpu_allocator().stats().bytes_in_use, before + 4000);
  }
  EXPECT_EQ(cpu_allocator().stats().bytes_in_use, before);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3F80);
  EXPECT_EQ(from_bfloat16(to_bfloat16(-2.5f)), -2.5f);
  // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1).
  EXPECT_EQ(from_bfloat16(to_bfloat16(1.0f + 1.0f / 256.0f)), 1.0f);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: the even one is 1 + 2^-6.
  EXPECT_EQ(from_bfloat16(to_bfloat16(1.0f + 3.0f / 256.0f)), 1.0f + 1.0f / 64.0f);
}

}  // namespace
}  // namespace engine
