// The data-loader floor must reproduce seed 001's arithmetic exactly (design
// issue-8 section 2.2), and the annotation parser must name the part it
// refuses, so a person can fix the annotation from the message alone.

#include "gpusizer/sizing/data_loader.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "gpusizer/quantity/quantity.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer::data_loader_test {
namespace {

constexpr int64_t kMi = int64_t{1} << 20;
constexpr int64_t kGi = int64_t{1} << 30;

Quantity gibibytes(int64_t n) { return Quantity::from_bytes(n * kGi); }

const DataLoaderPolicy& policy() { return default_policy().rule_settings.get<DataLoaderPolicy>(); }

DataLoaderSpec parsed(std::string_view text, const DataLoaderPolicy& with = policy()) {
  const auto spec = parse_dataloader(text, with);
  EXPECT_TRUE(spec.ok()) << text << ": " << (spec.ok() ? "" : spec.error());
  return spec.ok() ? spec.value() : DataLoaderSpec{};
}

DataLoaderFloor floor_of(std::string_view text, int64_t gpus) {
  return data_loader_floor(policy(), parsed(text), gpus);
}

// ---------------------------------------------------------------------------
// The annotation.

TEST(DataLoaderAnnotation, ParsesTheSeedExample) {
  const DataLoaderSpec spec = parsed("workers=12,prefetch=3,batch=256,sample=3x224x224,dtype=float32");
  EXPECT_EQ(spec.workers, 12);
  EXPECT_EQ(spec.prefetch, 3);
  EXPECT_EQ(spec.batch, 256);
  EXPECT_EQ(spec.sample, (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(spec.dtype, "float32");
  EXPECT_EQ(spec.dtype_bytes, 4);
}

TEST(DataLoaderAnnotation, PrefetchAndDtypeDefault) {
  const DataLoaderSpec spec = parsed("workers=12,batch=256,sample=3x224x224");
  EXPECT_EQ(spec.prefetch, 2);  // the default policy's defaultPrefetch
  EXPECT_EQ(spec.dtype, "float32");
  EXPECT_EQ(spec.dtype_bytes, 4);

  // The default prefetch is the policy's, not a constant.
  DataLoaderPolicy five = policy();
  five.default_prefetch = 5;
  EXPECT_EQ(parsed("workers=12,batch=256,sample=3x224x224", five).prefetch, 5);
}

TEST(DataLoaderAnnotation, SpacesAroundPartsAreIgnoredInAnyOrder) {
  const DataLoaderSpec spec = parsed("  dtype=uint8 , sample=1024x1024,  batch=7 ,workers=0  ");
  EXPECT_EQ(spec.workers, 0);
  EXPECT_EQ(spec.batch, 7);
  EXPECT_EQ(spec.sample, (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(spec.dtype_bytes, 1);
}

TEST(DataLoaderAnnotation, EightDimensionsAndTheBoundsAreAccepted) {
  const DataLoaderSpec spec =
      parsed("workers=1024,prefetch=1024,batch=1000000,sample=1000000x1x1x1x1x1x1x1,dtype=uint8");
  EXPECT_EQ(spec.workers, 1024);
  EXPECT_EQ(spec.prefetch, 1024);
  EXPECT_EQ(spec.batch, 1000000);
  EXPECT_EQ(spec.sample, (std::vector<int64_t>{1000000, 1, 1, 1, 1, 1, 1, 1}));
}

struct BadAnnotation {
  std::string what;
  std::string text;
  std::string expected;  // the error starts with this
};

std::ostream& operator<<(std::ostream& os, const BadAnnotation& c) { return os << c.what; }

class DataLoaderAnnotationError : public ::testing::TestWithParam<BadAnnotation> {};

TEST_P(DataLoaderAnnotationError, NamesTheAnnotationAndThePart) {
  const BadAnnotation& c = GetParam();
  const auto spec = parse_dataloader(c.text, policy());
  ASSERT_FALSE(spec.ok()) << c.text;
  EXPECT_EQ(spec.error().substr(0, c.expected.size()), c.expected) << spec.error();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DataLoaderAnnotationError,
    ::testing::Values(
        BadAnnotation{"workers_in_words", "workers=twelve,batch=256,sample=3x224x224",
                      "part \"workers=twelve\": must be a whole number from 0 to 1024"},
        BadAnnotation{"workers_negative", "workers=-1,batch=256,sample=3x224x224",
                      "part \"workers=-1\": must be a whole number from 0 to 1024"},
        BadAnnotation{"workers_over_1024", "workers=1025,batch=256,sample=3x224x224",
                      "part \"workers=1025\": must be a whole number from 0 to 1024"},
        BadAnnotation{"prefetch_zero", "workers=1,prefetch=0,batch=256,sample=3x224x224",
                      "part \"prefetch=0\": must be a whole number from 1 to 1024"},
        BadAnnotation{"sample_trailing_x", "workers=12,batch=256,sample=3x224x",
                      "part \"sample=3x224x\": must be 1 to 8 dimensions such as 3x224x224, each a whole number "
                      "from 1 to 1000000"},
        BadAnnotation{"sample_nine_dimensions", "workers=12,batch=256,sample=1x1x1x1x1x1x1x1x1",
                      "part \"sample=1x1x1x1x1x1x1x1x1\": must be 1 to 8 dimensions"},
        BadAnnotation{"sample_zero_dimension", "workers=12,batch=256,sample=3x0x224",
                      "part \"sample=3x0x224\": must be 1 to 8 dimensions"},
        BadAnnotation{"dtype_unknown", "workers=12,batch=256,sample=3x224x224,dtype=float128",
                      "part \"dtype=float128\": unknown dtype \"float128\" (known: bf16, bfloat16, float16, float32, "
                      "float64, fp16, fp32, int32, int64, int8, uint8)"},
        BadAnnotation{"key_twice", "workers=1,workers=2,batch=256,sample=3x224x224",
                      "part \"workers=2\": repeats key \"workers\""},
        BadAnnotation{"unknown_key", "worker=12,batch=256,sample=3x224x224",
                      "part \"worker=12\": unknown key \"worker\" (known: workers, prefetch, batch, sample, dtype)"},
        BadAnnotation{"no_equals", "workers,batch=256,sample=3x224x224", "part \"workers\": must be key=value"},
        BadAnnotation{"missing_batch", "workers=12,prefetch=3,sample=3x224x224",
                      "has no part \"batch=...\" (workers, batch and sample are required)"},
        BadAnnotation{"batch_zero", "workers=12,batch=0,sample=3x224x224",
                      "part \"batch=0\": must be a whole number from 1 to 1000000"},
        BadAnnotation{"empty", "", "is empty"}, BadAnnotation{"only_spaces", "   ", "is empty"},
        // Read again for each pod template that takes the object's: refused
        // unread, even when only spaces (issue 25).
        BadAnnotation{"longer_than_read", "workers=12,batch=256,sample=3x224x224" + std::string(4096, ' '),
                      "is 4133 bytes, more than the 4096 gpu-sizer reads; write key=value parts, e.g. workers=12"},
        BadAnnotation{"spaces_longer_than_read", std::string(4097, ' '), "is 4097 bytes, more than the 4096"},
        BadAnnotation{"empty_part", "workers=12,,batch=256,sample=3x224x224", "has an empty part"},
        BadAnnotation{"trailing_comma", "workers=12,batch=256,sample=3x224x224,", "has an empty part"},
        // 10^6 samples of 10^18 float32 values: 4 x 10^24 bytes.
        BadAnnotation{"batch_overflow", "workers=1,batch=1000000,sample=1000000x1000000x1000000",
                      "part \"sample=1000000x1000000x1000000\": a batch of 1000000 such samples of float32 is too "
                      "large (more than 2^62 bytes)"},
        // 10^48 values per sample would overflow even 128 bits; the long
        // part is quoted by its first 64 bytes and its length.
        BadAnnotation{"sample_overflow",
                      "workers=1,batch=1,sample=1000000x1000000x1000000x1000000x1000000x1000000x1000000x1000000",
                      "part \"sample=1000000x1000000x1000000x1000000x1000000x1000000x1000000x1\"... (70 bytes): a "
                      "batch of 1 such samples of float32 is too large"},
        // Each batch is 8 x 10^15 bytes, fine; 1024 x 1024 x 1.56 of them is not.
        BadAnnotation{"buffer_overflow", "workers=1024,prefetch=1024,batch=1000000,sample=1000000x1000,dtype=float64",
                      "part \"workers=1024\": workers x prefetch x batch bytes x overhead factor is too large "
                      "(more than 2^62 bytes per GPU)"}),
    [](const ::testing::TestParamInfo<BadAnnotation>& info) { return info.param.what; });

// ---------------------------------------------------------------------------
// The floor.

TEST(DataLoaderRule, SeedExampleNeeds14Gi) {
  const DataLoaderFloor floor = floor_of("workers=12,prefetch=3,batch=256,sample=3x224x224,dtype=float32", 1);
  EXPECT_EQ(floor.batch_bytes, 154140672);            // seed 001: "154,140,672 bytes"
  EXPECT_EQ(floor.buffer_bytes_per_gpu, 8656540140);  // ceil(36 x 154140672 x 1.56): "~8 GB"
  EXPECT_EQ(floor.memory, gibibytes(14));             // 8.06 + 2 + 3 GiB, rounded up; seed "~13 GB"
  EXPECT_EQ(floor.memory.to_string(), "14Gi");
  EXPECT_EQ(floor.detail, "1 x (12 workers x 3 prefetch x 147Mi batch x 1.56 + 2Gi) + 3Gi");
}

// Design section 5: with 1 GPU the train table gives 64Gi; these three land
// at it, one GiB under and one over.
TEST(DataLoaderRule, FloorAtTheTableIs64Gi) {
  const DataLoaderFloor floor = floor_of("workers=4,prefetch=2,batch=4800,sample=1024x1024,dtype=uint8", 1);
  EXPECT_EQ(floor.batch_bytes, 4800 * kMi);
  EXPECT_EQ(floor.memory, gibibytes(64));
}

TEST(DataLoaderRule, FloorJustUnderTheTableIs63Gi) {
  EXPECT_EQ(floor_of("workers=4,prefetch=2,batch=4700,sample=1024x1024,dtype=uint8", 1).memory, gibibytes(63));
}

TEST(DataLoaderRule, FloorJustOverTheTableIs65Gi) {
  EXPECT_EQ(floor_of("workers=4,prefetch=2,batch=4900,sample=1024x1024,dtype=uint8", 1).memory, gibibytes(65));
}

TEST(DataLoaderRule, SeedOomRowOnFourGpusNeeds241Gi) {
  const DataLoaderFloor floor = floor_of("workers=32,prefetch=8,batch=256,sample=3x224x224", 4);
  EXPECT_EQ(floor.buffer_bytes_per_gpu, 61557618770);  // 57.33 GiB, seed 001's "~59 GB" OOM row
  EXPECT_EQ(floor.memory, gibibytes(241));             // 4 x 59.33 + 3 = 240.3 GiB
  EXPECT_EQ(floor.brief, "4x(32x8x147Mi x1.56+2Gi)+3Gi");
  EXPECT_EQ(floor.detail, "4 x (32 workers x 8 prefetch x 147Mi batch x 1.56 + 2Gi) + 3Gi");
}

TEST(DataLoaderRule, WarningShowsTheArithmeticUnder120Characters) {
  const DataLoaderFloor floor = floor_of("workers=32,prefetch=8,batch=256,sample=3x224x224", 4);
  // The warning of design section 2.2, built the way the decision will.
  const std::string warning = "container \"trainer\": memory request 192Gi->" + floor.memory.to_string() +
                              " (4 GPUs, data loader " + floor.brief + ")";
  EXPECT_EQ(warning,
            "container \"trainer\": memory request 192Gi->241Gi (4 GPUs, data loader 4x(32x8x147Mi x1.56+2Gi)+3Gi)");
  EXPECT_LT(warning.size(), 120u);
}

TEST(DataLoaderRule, BasesAreAddedPerGpuAndOncePerPod) {
  // No workers: no buffer, only 2Gi per GPU and 3Gi per pod.
  EXPECT_EQ(floor_of("workers=0,batch=256,sample=3x224x224", 1).memory, gibibytes(5));
  EXPECT_EQ(floor_of("workers=0,batch=256,sample=3x224x224", 3).memory, gibibytes(9));
  // The seed example on 2 GPUs: 2 x (8.06 + 2) + 3 = 23.1 GiB.
  EXPECT_EQ(floor_of("workers=12,prefetch=3,batch=256,sample=3x224x224", 2).memory, gibibytes(24));
}

TEST(DataLoaderRule, RoundsUpToThePolicyGranule) {
  DataLoaderPolicy fine = policy();
  fine.round_up_to = Quantity::from_bytes(kMi);
  const DataLoaderSpec spec = parsed("workers=12,prefetch=3,batch=256,sample=3x224x224");
  // 8656540140 + 2Gi + 3Gi = 14025249260 bytes = 13375.5 Mi.
  EXPECT_EQ(data_loader_floor(fine, spec, 1).memory, Quantity::from_bytes(13376 * kMi));
}

TEST(DataLoaderRule, OverheadFactorComesFromThePolicy) {
  DataLoaderPolicy none = policy();
  none.overhead_factor = 1000;
  const DataLoaderFloor floor =
      data_loader_floor(none, parsed("workers=4,prefetch=2,batch=4800,sample=1024x1024,dtype=uint8"), 1);
  EXPECT_EQ(floor.buffer_bytes_per_gpu, int64_t{8} * 4800 * kMi);  // 37.5 GiB: + 5 GiB rounds to 43Gi
  EXPECT_EQ(floor.memory, gibibytes(43));
  EXPECT_EQ(floor.brief, "1x(4x2x4800Mi x1+2Gi)+3Gi");
}

}  // namespace
}  // namespace gpusizer::data_loader_test
