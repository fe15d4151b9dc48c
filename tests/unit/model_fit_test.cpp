// GPU memory fit (design docs/plans/issue-8-design.md 2.3, 3.B, 3.C, 5):
// the estimates must reproduce the seeds' numbers exactly, the verdict must
// flip exactly at the safety margin and at the capacity, a denial must tell
// a person what to change, and every malformed annotation must name its part.

#include "gpusizer/sizing/model_fit.h"

#include <cstdint>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/sizing/policy.h"

namespace gpusizer {
namespace {

constexpr int64_t kGB = 1'000'000'000;

const GpuMemoryPolicy& policy() { return default_policy().gpu_memory; }

const GpuModel& gpu(const std::string& name) {
  const GpuModel* found = policy().find_gpu(name);
  EXPECT_NE(found, nullptr) << name;
  static const GpuModel kMissing{"missing", Quantity::from_bytes(1), {}};
  return found ? *found : kMissing;
}

ModelSpec parse_ok(const std::string& text, int64_t pod_gpus = 2, ModelMode default_mode = ModelMode::kTrain) {
  auto parsed = parse_model(text, policy(), default_mode, pod_gpus);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : ModelSpec{};
}

// The need per GPU as the messages show it.
std::string need_gb(const std::string& text, int64_t gpus, ModelMode default_mode = ModelMode::kTrain) {
  return gb_text(vram_per_gpu(policy(), parse_ok(text, gpus, default_mode), gpus).total);
}

VramCheck check(const std::string& text, int64_t gpus, const std::string& gpu_name,
                ModelMode default_mode = ModelMode::kTrain) {
  return check_vram(policy(), parse_ok(text, gpus, default_mode), gpus, gpu(gpu_name), "annotation gpu-sizer.io/gpu");
}

// ---------------------------------------------------------------------------
// Estimates.

TEST(VramEstimate, SeedInference3BAt16kIs22GB) {
  // Seed 002: "3B parameters and 16k context ... ≈ 6 GB (weights) + 16 GB (overhead) = ~22 GB".
  const VramNeed need = vram_per_gpu(policy(), parse_ok("params=3B,context=16k,mode=infer", 1), 1);
  EXPECT_EQ(need.weights, 6 * kGB);
  EXPECT_EQ(need.context, 16 * kGB);
  EXPECT_EQ(need.total, 22 * kGB);
  EXPECT_EQ(gb_text(need.total), "22.0");
}

TEST(VramEstimate, InferencePrecisionScalesTheWeightsOnly) {
  const VramNeed need = vram_per_gpu(policy(), parse_ok("params=3B,context=16k,mode=infer,precision=int4", 1), 1);
  EXPECT_EQ(need.weights, 1'500'000'000);
  EXPECT_EQ(need.context, 16 * kGB);
  EXPECT_EQ(need.total, 17'500'000'000);
}

TEST(VramEstimate, FullTrainingIs40BytesPerParamAtZero0) {
  // Seed 002: "VRAM_training (GB) ≈ 40 × params (billions)", on any number of GPUs without ZeRO.
  for (int64_t gpus : {1, 2, 8}) {
    EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=7B", gpus), gpus).total, 280 * kGB) << gpus;
  }
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=1B", 1), 1).total, 40 * kGB);
  // The parts follow seed 004's full column 8:16:8:4, each rounded up.
  const VramNeed need = vram_per_gpu(policy(), parse_ok("params=7B"), 2);
  EXPECT_EQ(gb_text(need.weights), "62.3");
  EXPECT_EQ(gb_text(need.optimizer), "124.5");
  EXPECT_EQ(gb_text(need.gradients), "62.3");
  EXPECT_EQ(gb_text(need.activations), "31.2");
}

TEST(VramEstimate, ZeroStagesShardOptimizerThenGradientsThenWeights) {
  EXPECT_EQ(need_gb("params=7B,zero=0", 2), "280.0");
  EXPECT_EQ(need_gb("params=7B,zero=1", 2), "217.8");
  EXPECT_EQ(need_gb("params=7B,zero=2", 2), "186.7");
  EXPECT_EQ(need_gb("params=7B,zero=3", 2), "155.6");
  // Which part each stage halves on 2 GPUs; activations are never sharded.
  auto parts = [](const std::string& text) {
    const VramNeed need = vram_per_gpu(policy(), parse_ok(text), 2);
    return gb_text(need.weights) + " " + gb_text(need.optimizer) + " " + gb_text(need.gradients) + " " +
           gb_text(need.activations);
  };
  EXPECT_EQ(parts("params=7B,zero=0"), "62.3 124.5 62.3 31.2");
  EXPECT_EQ(parts("params=7B,zero=1"), "62.3 62.3 62.3 31.2");
  EXPECT_EQ(parts("params=7B,zero=2"), "62.3 62.3 31.2 31.2");
  EXPECT_EQ(parts("params=7B,zero=3"), "31.2 62.3 31.2 31.2");
}

TEST(VramEstimate, LoraAndQloraFollowSeed004Shares) {
  EXPECT_EQ(need_gb("params=7B,method=lora", 2), "93.4");
  EXPECT_EQ(need_gb("params=7B,method=lora,zero=3", 2), "54.5");
  EXPECT_EQ(need_gb("params=7B,method=qlora", 2), "77.8");
  EXPECT_EQ(need_gb("params=7B,method=qlora,zero=3", 2), "46.7");
  EXPECT_EQ(need_gb("params=2B,method=qlora,zero=0", 2), "22.3");
}

TEST(VramEstimate, RanksOverridesThePodGpuCount) {
  const ModelSpec spec = parse_ok("params=7B,zero=3,ranks=8", 2);
  EXPECT_EQ(spec.ranks, 8);
  EXPECT_EQ(vram_per_gpu(policy(), spec, 2).total, vram_per_gpu(policy(), parse_ok("params=7B,zero=3", 8), 8).total);
  EXPECT_EQ(gb_text(vram_per_gpu(policy(), spec, 2).total), "62.3");
  EXPECT_EQ(need_gb("params=7B,zero=3", 2), "155.6");
}

TEST(VramEstimate, TensorParallelDividesInference) {
  const VramNeed need = vram_per_gpu(policy(), parse_ok("params=3B,context=16k,mode=infer,tp=2", 2), 2);
  EXPECT_EQ(need.weights, 3 * kGB);
  EXPECT_EQ(need.context, 8 * kGB);
  EXPECT_EQ(need.total, 11 * kGB);
  // Without tp every GPU holds the whole model (replicas).
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=3B,context=16k,mode=infer", 2), 2).total, 22 * kGB);
}

TEST(VramEstimate, GbTextRoundsUpToATenth) {
  EXPECT_EQ(gb_text(0), "0.0");
  EXPECT_EQ(gb_text(1), "0.1");
  EXPECT_EQ(gb_text(100'000'000), "0.1");
  EXPECT_EQ(gb_text(100'000'001), "0.2");
  EXPECT_EQ(gb_text(279'999'999'999), "280.0");
  EXPECT_EQ(gb_text(280 * kGB), "280.0");
}

// ---------------------------------------------------------------------------
// Verdicts at, under and over the thresholds (design section 5). RTX-4090:
// 24 GB, usable 0.85 x 24 = 20.4 GB exactly.

VramVerdict verdict(const std::string& text, ModelMode default_mode = ModelMode::kInfer) {
  return check(text, 1, "RTX-4090", default_mode).verdict;
}

TEST(VramFit, AtTheSafetyMarginFits) {
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=10B,context=400", 1, ModelMode::kInfer), 1).total, 20'400'000'000);
  EXPECT_EQ(verdict("params=10B,context=400"), VramVerdict::kFits);
  EXPECT_EQ(verdict("params=10B,context=300"), VramVerdict::kFits);
}

TEST(VramFit, JustOverTheMarginWarns) {
  EXPECT_EQ(verdict("params=10B,context=500"), VramVerdict::kTight);
  // Two bytes over (1 param at bf16): a token's step is 1 MB.
  EXPECT_EQ(verdict("params=10.000000001B,context=400"), VramVerdict::kTight);
}

TEST(VramFit, AtCapacityWarns) {
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=12B", 1, ModelMode::kInfer), 1).total, 24 * kGB);
  EXPECT_EQ(verdict("params=12B"), VramVerdict::kTight);
  EXPECT_EQ(verdict("params=11.9B"), VramVerdict::kTight);
}

TEST(VramFit, JustOverCapacityIsDenied) {
  EXPECT_EQ(verdict("params=12B,context=100"), VramVerdict::kTooLarge);
  EXPECT_EQ(verdict("params=12.000000001B"), VramVerdict::kTooLarge);
}

TEST(VramFit, Training510MFits520MWarns610MIsDenied) {
  EXPECT_EQ(need_gb("params=510M", 1), "20.4");
  EXPECT_EQ(verdict("params=500M", ModelMode::kTrain), VramVerdict::kFits);
  EXPECT_EQ(verdict("params=510M", ModelMode::kTrain), VramVerdict::kFits);
  EXPECT_EQ(verdict("params=520M", ModelMode::kTrain), VramVerdict::kTight);
  EXPECT_EQ(verdict("params=610M", ModelMode::kTrain), VramVerdict::kTooLarge);
}

TEST(VramFit, SevenBFullOnTwo24GBGpusIsDeniedWithTheOptionsThatFit) {
  const VramCheck result =
      check_vram(policy(), parse_ok("params=7B,context=4k,precision=bf16,method=full,zero=0,mode=train"), 2,
                 gpu("NVIDIA-GeForce-RTX-4090"), "nodeSelector nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090");
  EXPECT_EQ(result.verdict, VramVerdict::kTooLarge);
  EXPECT_EQ(result.message,
            "model params=7B method=full zero=0 needs 280.0 GB per GPU (40 bytes/param: weights 62.3 + optimizer "
            "124.5 + gradients 62.3 + activations 31.2), more than the 24 GB of RTX-4090 (nodeSelector "
            "nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090; 20.4 GB usable at safety margin 0.85). "
            "Would fit: method=qlora,zero=3 on 2 x 80 GB GPUs (A100-80GB, H100-80GB): 46.7 GB/GPU; "
            "method=lora,zero=3 on 2 x 80 GB GPUs: 54.5 GB/GPU; zero=3 on 7 x 80 GB GPUs: 66.7 GB/GPU. "
            "Not enough: zero=3: 155.6 GB/GPU; zero=3 on 8 x 24 GB GPUs: 62.3 GB/GPU; method=lora,zero=3: 54.5 "
            "GB/GPU; method=qlora,zero=3: 46.7 GB/GPU; zero=3 on 2 x 80 GB GPUs: 155.6 GB/GPU.");
  EXPECT_EQ(result.brief, "model 7B full needs 280.0 GB/GPU, RTX-4090 has 24 GB (gpu-sizer explain lists options)");
  // The structured options carry the same facts.
  ASSERT_EQ(result.options.size(), 8u);
  EXPECT_EQ(result.options[0].change, "method=qlora,zero=3");
  EXPECT_EQ(result.options[0].gpus, 2);
  EXPECT_EQ(result.options[0].gpu_memory, Quantity::from_bytes(80 * kGB));
  EXPECT_EQ(result.options[0].gpu_names, (std::vector<std::string>{"A100-80GB", "H100-80GB"}));
  EXPECT_TRUE(result.options[0].fits);
  EXPECT_EQ(result.options[2].gpus, 7);
  EXPECT_FALSE(result.options[3].fits);
}

TEST(VramFit, TwoBQloraOnTwoRtx4090sWarns) {
  const VramCheck result = check("params=2B,method=qlora,zero=0", 2, "RTX-4090");
  EXPECT_EQ(result.verdict, VramVerdict::kTight);
  EXPECT_EQ(result.brief,
            "model 2B qlora: 22.3 GB/GPU is over 85% of RTX-4090's 24 GB (20.4 GB usable); may run out of memory");
  // Single changes fit, so no pair is tried, and method=lora (heavier than qlora) is never offered.
  EXPECT_EQ(result.message,
            "model params=2B method=qlora zero=0 needs 22.3 GB per GPU (qlora share of 40 bytes/param: weights 4.5 + "
            "optimizer 8.9 + gradients 4.5 + activations 4.5), over the usable memory of the 24 GB of RTX-4090 "
            "(annotation gpu-sizer.io/gpu; 20.4 GB usable at safety margin 0.85); it may run out of memory. "
            "Would fit: zero=3: 13.4 GB/GPU; 2 x 32 GB GPUs (V100-32GB, RTX-5090): 22.3 GB/GPU; "
            "zero=3 on 3 x 24 GB GPUs: 10.4 GB/GPU.");
}

TEST(VramFit, InferenceOptionsAreLighterPrecisionLargerGpusAndTensorParallelism) {
  // Seed 002's 3B/16k on an A10G (23 GB, usable 19.55): over the margin.
  const VramCheck result = check("params=3B,context=16k", 1, "A10G", ModelMode::kInfer);
  EXPECT_EQ(result.verdict, VramVerdict::kTight);
  EXPECT_EQ(result.message,
            "model params=3B context=16k precision=bf16 mode=infer needs 22.0 GB per GPU (weights 6.0 + context "
            "16.0), over the usable memory of the 23 GB of A10G (annotation gpu-sizer.io/gpu; 19.5 GB usable at "
            "safety margin 0.85); it may run out of memory. Would fit: precision=fp8: 19.0 GB/GPU; "
            "1 x 32 GB GPU (V100-32GB, RTX-5090): 22.0 GB/GPU; tp=2 on 2 x 23 GB GPUs: 11.0 GB/GPU.");
  // And on an A100-40GB it fits, with no options.
  const VramCheck a100 = check("params=3B,context=16k", 1, "A100-40GB", ModelMode::kInfer);
  EXPECT_EQ(a100.verdict, VramVerdict::kFits);
  EXPECT_TRUE(a100.options.empty());
  EXPECT_EQ(a100.brief, "model 3B infer: 22.0 GB/GPU fits A100-40GB (34.0 GB usable of 40 GB)");
}

TEST(VramFit, NothingFitsSaysSo) {
  const VramCheck result = check("params=100000B", 8, "H100-80GB");
  EXPECT_EQ(result.verdict, VramVerdict::kTooLarge);
  EXPECT_NE(result.message.find(" Would fit: nothing on up to 8 GPUs of the models in gpuMemory.gpus. Not enough: "),
            std::string::npos)
      << result.message;
  for (const VramOption& option : result.options) EXPECT_FALSE(option.fits) << option.change;
}

TEST(VramFit, BriefsStayWithin100Characters) {
  const GpuModel long_name{"NVIDIA-Some-Very-Long-Product-Name-From-A-Policy-File", Quantity::from_bytes(24 * kGB), {}};
  for (const char* text : {"params=12.345678901B,method=qlora", "params=2B,method=qlora", "params=100000B"}) {
    for (const GpuModel* model : {&gpu("Quadro-RTX-6000"), &long_name}) {
      const VramCheck result = check_vram(policy(), parse_ok(text), 2, *model, "");
      EXPECT_LE(result.brief.size(), 100u) << result.brief;
      EXPECT_FALSE(result.brief.empty());
    }
  }
}

TEST(GpuModel, ProductLabelValueFindsTheTableEntry) {
  EXPECT_EQ(gpu("NVIDIA-GeForce-RTX-4090").name, "RTX-4090");
  EXPECT_EQ(gpu("NVIDIA-A100-SXM4-80GB").name, "A100-80GB");
  EXPECT_EQ(policy().find_gpu("NVIDIA-L4"), nullptr);
}

// ---------------------------------------------------------------------------
// The annotation.

TEST(ModelAnnotation, ParsesEveryKeyAndDefaultsModeFromTheProfile) {
  const ModelSpec train = parse_ok(" params=1.5B , context=16384,precision=fp16,method=lora,zero=2,ranks=4 ", 2);
  EXPECT_EQ(train.params, 1'500'000'000);
  EXPECT_EQ(train.context_tokens, 16384);
  EXPECT_EQ(train.precision, "fp16");
  EXPECT_EQ(train.method, TrainingMethod::kLora);
  EXPECT_EQ(train.zero, 2);
  EXPECT_EQ(train.mode, ModelMode::kTrain);
  EXPECT_EQ(train.ranks, 4);

  const ModelSpec infer = parse_ok("params=350m,context=16K,precision=int4,tp=4", 8, ModelMode::kInfer);
  EXPECT_EQ(infer.params, 350'000'000);
  EXPECT_EQ(infer.context_tokens, 16'000);
  EXPECT_EQ(infer.precision, "int4");
  EXPECT_EQ(infer.mode, ModelMode::kInfer);
  EXPECT_EQ(infer.tp, 4);

  // Defaults; an explicit mode beats the profile's.
  const ModelSpec defaults = parse_ok("params=7b", 2, ModelMode::kInfer);
  EXPECT_EQ(defaults.mode, ModelMode::kInfer);
  EXPECT_EQ(defaults.context_tokens, 0);
  EXPECT_EQ(defaults.precision, "bf16");
  EXPECT_EQ(defaults.tp, 1);
  EXPECT_EQ(parse_ok("params=7B,mode=train", 2, ModelMode::kInfer).mode, ModelMode::kTrain);
  const ModelSpec train_defaults = parse_ok("params=7B", 2, ModelMode::kTrain);
  EXPECT_EQ(train_defaults.method, TrainingMethod::kFull);
  EXPECT_EQ(train_defaults.zero, 0);
  EXPECT_EQ(train_defaults.ranks, 0);
  EXPECT_EQ(parse_ok("params=100000B").params, 100'000 * kGB);
  EXPECT_EQ(parse_ok("params=1M").params, 1'000'000);
}

struct AnnotationErrorCase {
  std::string text;
  int64_t pod_gpus;
  ModelMode default_mode;
  std::string error;
};

std::ostream& operator<<(std::ostream& out, const AnnotationErrorCase& c) { return out << c.text; }

class ModelAnnotationError : public ::testing::TestWithParam<AnnotationErrorCase> {};

TEST_P(ModelAnnotationError, NamesTheAnnotationAndThePart) {
  const AnnotationErrorCase& c = GetParam();
  auto parsed = parse_model(c.text, policy(), c.default_mode, c.pod_gpus);
  ASSERT_FALSE(parsed.ok()) << c.text;
  EXPECT_EQ(parsed.error(), c.error);
}

const std::string kEverySize =
    "must be a number of parameters with B (billions) or M (millions), e.g. 7B, 1.5B or 350M";

INSTANTIATE_TEST_SUITE_P(
    Parts, ModelAnnotationError,
    ::testing::Values(
        AnnotationErrorCase{"params=7", 2, ModelMode::kTrain, "part \"params=7\": " + kEverySize},
        AnnotationErrorCase{"params=7GB", 2, ModelMode::kTrain, "part \"params=7GB\": " + kEverySize},
        AnnotationErrorCase{"params=1.0000000001B", 2, ModelMode::kTrain,
                            "part \"params=1.0000000001B\": " + kEverySize},
        AnnotationErrorCase{"params=0.5M", 2, ModelMode::kTrain, "part \"params=0.5M\": must be from 1M to 100000B"},
        AnnotationErrorCase{"params=100001B", 2, ModelMode::kTrain,
                            "part \"params=100001B\": must be from 1M to 100000B"},
        AnnotationErrorCase{"params=7B,zero=4", 2, ModelMode::kTrain, "part \"zero=4\": must be 0, 1, 2 or 3"},
        AnnotationErrorCase{"params=7B,method=dora", 2, ModelMode::kTrain,
                            "part \"method=dora\": must be full, lora or qlora"},
        AnnotationErrorCase{"params=7B,mode=serve", 2, ModelMode::kTrain,
                            "part \"mode=serve\": must be train or infer"},
        AnnotationErrorCase{"params=7B,context=16q", 2, ModelMode::kInfer,
                            "part \"context=16q\": must be tokens (16384) or thousands of tokens (16k)"},
        AnnotationErrorCase{"params=7B,mode=infer,zero=3", 2, ModelMode::kTrain,
                            "part \"zero=3\": applies to mode=train only; remove it or set mode=train"},
        AnnotationErrorCase{"params=7B,method=lora", 2, ModelMode::kInfer,
                            "part \"method=lora\": applies to mode=train only; remove it or set mode=train"},
        AnnotationErrorCase{"params=7B,ranks=4,mode=infer", 2, ModelMode::kTrain,
                            "part \"ranks=4\": applies to mode=train only; remove it or set mode=train"},
        AnnotationErrorCase{"params=7B,tp=2", 2, ModelMode::kTrain,
                            "part \"tp=2\": applies to mode=infer only; remove it or set mode=infer"},
        AnnotationErrorCase{"params=7B,precision=fp32", 2, ModelMode::kTrain,
                            "part \"precision=fp32\": training estimates assume mixed precision (bf16 or fp16); "
                            "4-bit training is method=qlora"},
        AnnotationErrorCase{"params=7B,precision=fp64", 1, ModelMode::kInfer,
                            "part \"precision=fp64\": unknown precision (gpuMemory.precisionBytes has bf16, fp16, "
                            "fp32, fp8, int4, int8)"},
        AnnotationErrorCase{"params=7B,mode=infer,tp=3", 2, ModelMode::kTrain,
                            "part \"tp=3\": must divide the pod's 2 GPUs: 1 or 2"},
        AnnotationErrorCase{"params=7B,tp=3", 8, ModelMode::kInfer,
                            "part \"tp=3\": must divide the pod's 8 GPUs: 1, 2, 4 or 8"},
        AnnotationErrorCase{"params=7B,ranks=1", 2, ModelMode::kTrain,
                            "part \"ranks=1\": must be at least the pod's 2 GPUs"},
        AnnotationErrorCase{"params=7B,zero=1,zero=2", 2, ModelMode::kTrain,
                            "part \"zero=2\": repeats key zero (each key at most once)"},
        AnnotationErrorCase{"params=7B,worker=12", 2, ModelMode::kTrain,
                            "part \"worker=12\": unknown key \"worker\" (known: params, context, precision, method, "
                            "zero, mode, ranks, tp)"},
        AnnotationErrorCase{"params=7B,zero", 2, ModelMode::kTrain, "part \"zero\": must be key=value, e.g. params=7B"},
        AnnotationErrorCase{"params=7B,,zero=1", 2, ModelMode::kTrain,
                            "has an empty part; write key=value parts separated by commas"},
        AnnotationErrorCase{"context=16k", 1, ModelMode::kInfer, "has no params; write e.g. \"params=7B\""},
        AnnotationErrorCase{"", 1, ModelMode::kTrain, "is empty; write e.g. \"params=7B,context=16k\""},
        AnnotationErrorCase{"  ", 1, ModelMode::kTrain, "is empty; write e.g. \"params=7B,context=16k\""}));

TEST(ModelAnnotation, ErrorReadsAfterThePodAndAnnotationPrefix) {
  auto parsed = parse_model("params=7B,zero=4", policy(), ModelMode::kTrain, 2);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ("pod ml-team/x: annotation " + std::string(kModelKey) + " " + parsed.error(),
            "pod ml-team/x: annotation gpu-sizer.io/model part \"zero=4\": must be 0, 1, 2 or 3");
}

}  // namespace
}  // namespace gpusizer
