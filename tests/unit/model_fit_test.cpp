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
#include "gpusizer/util/strings.h"

namespace gpusizer::model_fit_test {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

const GpuMemoryPolicy& policy() { return default_policy().rule_settings.get<GpuMemoryPolicy>(); }

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
// Estimates: the component model (docs/gpu-memory.md).

TEST(VramEstimate, SeedInference3BAt16kIsWeightsContextAndOverhead) {
  // Seed 002: 2 x 3 + 1 x 16 = 22 GB, plus the 1 GB overhead allowance.
  const VramNeed need = vram_per_gpu(policy(), parse_ok("params=3B,context=16k", 1, ModelMode::kInfer), 1);
  EXPECT_EQ(need.weights, 6 * kGB);
  EXPECT_EQ(need.context, 16 * kGB);
  EXPECT_EQ(need.overhead, 1 * kGB);
  EXPECT_EQ(need.certain, 6 * kGB);  // only the weights cannot shrink
  EXPECT_EQ(need.total, 23 * kGB);
}

TEST(VramEstimate, InferencePrecisionScalesTheWeightsOnly) {
  const VramNeed need =
      vram_per_gpu(policy(), parse_ok("params=3B,context=16k,precision=int4", 1, ModelMode::kInfer), 1);
  EXPECT_EQ(need.weights, 1'500'000'000);
  EXPECT_EQ(need.context, 16 * kGB);
  EXPECT_EQ(need.total, 18'500'000'000);
}

TEST(VramEstimate, TensorParallelSplitsWeightsAndContextNotTheOverhead) {
  const VramNeed need = vram_per_gpu(policy(), parse_ok("params=3B,context=16k,mode=infer,tp=2", 2), 2);
  EXPECT_EQ(need.weights, 3 * kGB);
  EXPECT_EQ(need.context, 8 * kGB);
  EXPECT_EQ(need.total, 12 * kGB);
  // Without tp each GPU holds the whole model.
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=3B,context=16k,mode=infer", 2), 2).total, 23 * kGB);
}

// Full fine-tuning with mixed-precision Adam: bf16 weights (2) and
// gradients (2), fp32 master weights and two moments (12): 16 bytes per
// parameter certain; activations (2/param) and overhead are allowances.
TEST(VramEstimate, FullTrainingIs16BytesPerParamCertain) {
  for (int64_t gpus : {1, 2, 8}) {
    const VramNeed need = vram_per_gpu(policy(), parse_ok("params=7B", gpus), gpus);
    EXPECT_EQ(need.certain, 112 * kGB) << gpus;  // unsharded: the same on every GPU
    EXPECT_EQ(need.weights, 14 * kGB);
    EXPECT_EQ(need.gradients, 14 * kGB);
    EXPECT_EQ(need.optimizer, 84 * kGB);
    EXPECT_EQ(need.activations, 14 * kGB);
    EXPECT_EQ(need.total, 127 * kGB);
  }
}

// The ZeRO paper's own example (Rajbhandari et al. 2019, figure 1): 7.5B
// parameters on 64 GPUs hold 120 GB, 31.4 GB, 16.6 GB and 1.9 GB of model
// states per GPU at stages 0 to 3: 2Ψ + 2Ψ + 12Ψ, sharded in turn.
TEST(VramEstimate, ZeroStagesShardOptimizerThenGradientsThenWeights) {
  const auto certain = [](const std::string& text) {
    return vram_per_gpu(policy(), parse_ok("params=7.5B," + text + ",ranks=64", 8), 8).certain;
  };
  EXPECT_EQ(certain("zero=0"), 120 * kGB);
  EXPECT_EQ(certain("zero=1"), 31'406'250'000);  // 15 + 15 + 90/64
  EXPECT_EQ(certain("zero=2"), 16'640'625'000);  // 15 + 105/64
  EXPECT_EQ(certain("zero=3"), 1'875'000'000);   // 120/64
  const VramNeed stage3 = vram_per_gpu(policy(), parse_ok("params=7.5B,zero=3,ranks=64", 8), 8);
  EXPECT_EQ(stage3.activations, 15 * kGB);  // never sharded
}

// LoRA trains adapterShare (1%) of the parameters: the base weights stay,
// the adapter's weights, gradients and Adam state are small.
TEST(VramEstimate, LoraAndQloraPayOptimizerStateOnlyForTheAdapter) {
  const VramNeed lora = vram_per_gpu(policy(), parse_ok("params=7B,method=lora", 1), 1);
  EXPECT_EQ(lora.weights, 14'140'000'000);  // 14 GB + 70M x 2
  EXPECT_EQ(lora.gradients, 140'000'000);
  EXPECT_EQ(lora.optimizer, 840'000'000);
  EXPECT_EQ(lora.certain, 15'120'000'000);
  EXPECT_EQ(lora.total, 23'120'000'000);  // + 7 GB activations + 1 GB overhead
  // QLoRA stores the base weights in 4-bit NF4 with double quantization.
  const VramNeed qlora = vram_per_gpu(policy(), parse_ok("params=7B,method=qlora", 1), 1);
  EXPECT_EQ(qlora.weights, 3'752'000'000);  // 7B x 0.516 + 70M x 2
  EXPECT_EQ(qlora.certain, 4'732'000'000);
}

TEST(VramEstimate, RanksOverridesThePodGpuCount) {
  const ModelSpec spec = parse_ok("params=7B,zero=3,ranks=8", 2);
  EXPECT_EQ(spec.ranks, 8);
  EXPECT_EQ(vram_per_gpu(policy(), spec, 2).total, vram_per_gpu(policy(), parse_ok("params=7B,zero=3", 8), 8).total);
  EXPECT_EQ(vram_per_gpu(policy(), spec, 2).certain, 14 * kGB);  // 112 / 8
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
// Verdicts at, under and over the thresholds, on a GPU of 24 GB exactly:
// usable 0.85 x 24 = 20.4 GB. The total decides fits or tight; only the
// certain part decides too large.

VramVerdict verdict(const std::string& text, ModelMode default_mode = ModelMode::kInfer) {
  static const GpuModel k24GB{"GPU-24GB", Quantity::from_bytes(24 * kGB), {}};
  return check_vram(policy(), parse_ok(text, 1, default_mode), 1, k24GB, "annotation gpu-sizer.io/gpu").verdict;
}

TEST(VramFit, AtTheSafetyMarginFits) {
  // 9.5B x 2 + 400 x 1 MB + 1 GB overhead = 20.4 GB.
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=9.5B,context=400", 1, ModelMode::kInfer), 1).total, 20'400'000'000);
  EXPECT_EQ(verdict("params=9.5B,context=400"), VramVerdict::kFits);
  EXPECT_EQ(verdict("params=9.5B,context=300"), VramVerdict::kFits);
}

TEST(VramFit, JustOverTheMarginWarns) {
  EXPECT_EQ(verdict("params=9.5B,context=500"), VramVerdict::kTight);
  // Two bytes over (1 param at bf16).
  EXPECT_EQ(verdict("params=9.500000001B,context=400"), VramVerdict::kTight);
}

// An allowance (context, overhead, activations) past the capacity warns:
// a shorter context or a smaller batch may bring it down.
TEST(VramFit, WeightsAtCapacityWarnsWhateverTheAllowances) {
  EXPECT_EQ(vram_per_gpu(policy(), parse_ok("params=12B", 1, ModelMode::kInfer), 1).certain, 24 * kGB);
  EXPECT_EQ(verdict("params=12B"), VramVerdict::kTight);
  EXPECT_EQ(verdict("params=12B,context=32k"), VramVerdict::kTight);
}

TEST(VramFit, WeightsJustOverCapacityAreDenied) {
  EXPECT_EQ(verdict("params=12.000000001B"), VramVerdict::kTooLarge);
  EXPECT_EQ(verdict("params=70B"), VramVerdict::kTooLarge);
}

// Full training on one 24 GB GPU: 16 bytes/param certain, 18 with the
// activation allowance, plus 1 GB.
TEST(VramFit, TrainingFitsWarnsAndIsDeniedOnTheCertainPart) {
  EXPECT_EQ(need_gb("params=1B", 1), "19.0");
  EXPECT_EQ(verdict("params=1B", ModelMode::kTrain), VramVerdict::kFits);
  EXPECT_EQ(verdict("params=1.1B", ModelMode::kTrain), VramVerdict::kTight);     // 20.8 total
  EXPECT_EQ(verdict("params=1.5B", ModelMode::kTrain), VramVerdict::kTight);     // 24.0 certain: at capacity
  EXPECT_EQ(verdict("params=1.6B", ModelMode::kTrain), VramVerdict::kTooLarge);  // 25.6 certain
}

TEST(VramFit, SevenBFullOnTwo24GBGpusIsDeniedWithTheOptionsThatFit) {
  const VramCheck result =
      check_vram(policy(), parse_ok("params=7B,context=4k,precision=bf16,method=full,zero=0,mode=train"), 2,
                 gpu("NVIDIA-GeForce-RTX-4090"), "nodeSelector nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090");
  EXPECT_EQ(result.verdict, VramVerdict::kTooLarge);
  EXPECT_EQ(result.message,
            "model params=7B method=full zero=0 needs 127.0 GB per GPU (weights 14.0 + gradients 14.0 + "
            "optimizer 84.0 = 112.0 certain, + activations 14.0 + overhead 1.0), and its certain part alone "
            "is more than the 25.8 GB of RTX-4090 (nodeSelector "
            "nvidia.com/gpu.product=NVIDIA-GeForce-RTX-4090; 21.8 GB usable at safety margin 0.85). Would "
            "fit: method=qlora: 12.8 GB/GPU; method=lora,zero=3: 15.6 GB/GPU; zero=3 on 2 x 85.6 GB GPUs "
            "(H100-80GB, H100-PCIe): 71.0 GB/GPU. Not enough: zero=3: 71.0 GB/GPU; zero=3 on 8 x 25.8 GB "
            "GPUs: 29.0 GB/GPU.");
  EXPECT_EQ(result.brief,
            "model 7B full: 112.0 GB/GPU certain, RTX-4090 has 25.8 GB (gpu-sizer explain lists options)");
  // The structured options carry the same facts.
  ASSERT_EQ(result.options.size(), 5u);
  EXPECT_EQ(result.options[0].change, "method=qlora");
  EXPECT_EQ(result.options[0].gpus, 2);
  EXPECT_EQ(result.options[0].gpu_memory, Quantity::from_bytes(24564 * kMiB));
  EXPECT_EQ(result.options[0].bytes_per_gpu, 12'732'000'000);
  EXPECT_TRUE(result.options[0].fits);
  EXPECT_EQ(result.options[1].change, "method=lora,zero=3");
  EXPECT_TRUE(result.options[1].fits);
  EXPECT_EQ(result.options[2].gpu_memory, Quantity::from_bytes(81559 * kMiB));  // the H100's
  EXPECT_TRUE(result.options[2].fits);
  EXPECT_FALSE(result.options[3].fits);
}

// 7B LoRA on one RTX 4090 (24564 MiB, 25.8 GB): its 15.2 GB certain part fits, the activation
// allowance takes it past the margin: a warning, with what would help.
TEST(VramFit, SevenBLoraOnOneRtx4090Warns) {
  const VramCheck result = check("params=7B,method=lora", 1, "RTX-4090");
  EXPECT_EQ(result.verdict, VramVerdict::kTight);
  EXPECT_EQ(result.brief,
            "model 7B lora: 23.2 GB/GPU is over 85% of RTX-4090's 25.8 GB (21.8 GB usable); may run out of "
            "memory");
  EXPECT_EQ(result.message,
            "model params=7B method=lora zero=0 needs 23.2 GB per GPU (weights 14.2 + gradients 0.2 + "
            "optimizer 0.9 = 15.2 certain, + activations 7.0 + overhead 1.0), over the usable memory of the "
            "25.8 GB of RTX-4090 (annotation gpu-sizer.io/gpu; 21.8 GB usable at safety margin 0.85); it may "
            "run out of memory (activation checkpointing or a smaller micro-batch lowers the activations). "
            "Would fit: method=qlora: 12.8 GB/GPU; 1 x 34.2 GB GPU (RTX-5090): 23.2 GB/GPU; zero=3 on 2 x "
            "25.8 GB GPUs: 15.6 GB/GPU. Not enough: zero=3: 23.2 GB/GPU.");
}

TEST(VramFit, InferenceOptionsAreLighterPrecisionLargerGpusAndTensorParallelism) {
  // Seed 002's 3B/16k on an A10G (23028 MiB, 24.1 GB, usable 20.5): 23 GB with the overhead, over the margin.
  const VramCheck result = check("params=3B,context=16k", 1, "A10G", ModelMode::kInfer);
  EXPECT_EQ(result.verdict, VramVerdict::kTight);
  EXPECT_EQ(result.message,
            "model params=3B context=16k precision=bf16 mode=infer needs 23.0 GB per GPU (weights 6.0 "
            "certain, + context 16.0 + overhead 1.0), over the usable memory of the 24.2 GB of A10G "
            "(annotation gpu-sizer.io/gpu; 20.5 GB usable at safety margin 0.85); it may run out of memory "
            "(a shorter context or fewer concurrent sequences lowers the context). Would fit: "
            "precision=fp8: 20.0 GB/GPU; 1 x 34.2 GB GPU (RTX-5090): 23.0 GB/GPU; tp=2 on 2 x 24.2 GB GPUs: "
            "12.0 GB/GPU.");
  // And on an A100-40GB it fits, with no options.
  const VramCheck a100 = check("params=3B,context=16k", 1, "A100-40GB", ModelMode::kInfer);
  EXPECT_EQ(a100.verdict, VramVerdict::kFits);
  EXPECT_TRUE(a100.options.empty());
  EXPECT_EQ(a100.brief, "model 3B infer: 23.0 GB/GPU fits A100-40GB (36.5 GB usable of 43 GB)");
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
  EXPECT_EQ(policy().find_gpu("NVIDIA-L40G"), nullptr);
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

std::ostream& operator<<(std::ostream& out, const AnnotationErrorCase& c) { return out << truncate_utf8(c.text, 80); }

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
        // Read again for each pod template that takes the object's (issue 25).
        AnnotationErrorCase{"params=7B," + std::string(4087, 'x'), 2, ModelMode::kTrain,
                            "is 4097 bytes, more than the 4096 gpu-sizer reads; write key=value parts, e.g. params=7B"},
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
        AnnotationErrorCase{"params=7B,tp=3", 2, ModelMode::kTrain,
                            "part \"tp=3\": tp x pp (3) must divide the world size 2 (the pod's GPUs; set ranks=N)"},
        AnnotationErrorCase{"params=7B,tp=2,pp=4,ranks=12", 2, ModelMode::kTrain,
                            "part \"pp=4\": tp x pp (8) must divide the world size 12 (ranks)"},
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
                            "part \"worker=12\": unknown key \"worker\" (known: params, model, context, precision, "
                            "method, zero, mode, ranks, tp, pp, seqs, rank, targets, batch, seq, optimizer, offload, "
                            "checkpointing, layers, hidden, heads, kvheads, headdim, intermediate, vocab)"},
        AnnotationErrorCase{"params=7B,zero", 2, ModelMode::kTrain, "part \"zero\": must be key=value, e.g. params=7B"},
        AnnotationErrorCase{"params=7B,,zero=1", 2, ModelMode::kTrain,
                            "has an empty part; write key=value parts separated by commas"},
        AnnotationErrorCase{"context=16k", 1, ModelMode::kInfer,
                            "has no params; write e.g. \"params=7B\" or model=NAME"},
        AnnotationErrorCase{"layers=32,hidden=4096,heads=32,kvheads=8,headdim=128,intermediate=11008,vocab=32000", 1,
                            ModelMode::kTrain, "has no params; write e.g. \"params=7B\" or model=NAME"},
        AnnotationErrorCase{"model=llama-9", 1, ModelMode::kTrain,
                            "part \"model=llama-9\": unknown model (gpuMemory.models has llama-2-7b, llama-2-13b, "
                            "llama-2-70b, llama-3-8b, llama-3-70b, llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, "
                            "mistral-7b, mixtral-8x7b, mixtral-8x22b, qwen2.5-7b, qwen2.5-14b, qwen2.5-32b, "
                            "qwen2.5-72b, gemma-2b, gemma-7b, gemma-2-9b, gemma-2-27b, falcon-7b, falcon-40b, "
                            "falcon-180b, phi-3-mini; or give its shape: layers, hidden, heads, kvheads, headdim, "
                            "intermediate, vocab)"},
        AnnotationErrorCase{"params=7B,layers=32,hidden=4096", 1, ModelMode::kTrain,
                            "part \"layers=32\": gives part of a model's shape; also give heads, kvheads, headdim, "
                            "intermediate, vocab, or model=NAME"},
        AnnotationErrorCase{"model=llama-2-7b,kvheads=5", 1, ModelMode::kTrain,
                            "part \"kvheads=5\": kvheads must divide heads (32)"},
        AnnotationErrorCase{"model=llama-2-7b,rank=16", 1, ModelMode::kTrain,
                            "part \"rank=16\": applies to method=lora or qlora only"},
        AnnotationErrorCase{"model=llama-2-7b,method=lora,rank=8,targets=mlp", 1, ModelMode::kTrain,
                            "part \"targets=mlp\": must be qv (PEFT's default: the attention q and v projections) "
                            "or all (every linear layer)"},
        AnnotationErrorCase{"model=llama-2-7b,seq=4k,checkpointing=yes", 1, ModelMode::kTrain,
                            "part \"checkpointing=yes\": must be true or false"},
        AnnotationErrorCase{"model=llama-2-7b,offload=optimizer", 1, ModelMode::kTrain,
                            "part \"offload=optimizer\": needs zero=1, 2 or 3 (DeepSpeed offloads the ZeRO "
                            "optimizer)"},
        AnnotationErrorCase{"model=llama-2-7b,zero=2,offload=all", 1, ModelMode::kTrain,
                            "part \"offload=all\": all (parameters too) needs zero=3; with zero=1 or 2 use "
                            "offload=optimizer"},
        AnnotationErrorCase{"model=llama-2-7b,offload=cpu", 1, ModelMode::kTrain,
                            "part \"offload=cpu\": must be none, optimizer (DeepSpeed offload_optimizer to CPU), all "
                            "(offload_optimizer and offload_param to CPU) or nvme (both to NVMe)"},
        AnnotationErrorCase{"model=llama-2-7b,zero=1,offload=nvme", 1, ModelMode::kTrain,
                            "part \"offload=nvme\": nvme (parameters too) needs zero=3; with zero=1 or 2 use "
                            "offload=optimizer"},
        AnnotationErrorCase{"model=llama-2-7b,optimizer=lion", 1, ModelMode::kTrain,
                            "part \"optimizer=lion\": unknown optimizer (gpuMemory.training.optimizers has adamw, "
                            "adamw-8bit, adamw-8bit-bf16, adamw-bf16, paged-adamw, paged-adamw-8bit, "
                            "paged-adamw-8bit-bf16, sgd)"},
        AnnotationErrorCase{"model=llama-2-7b,seqs=8", 1, ModelMode::kTrain,
                            "part \"seqs=8\": applies to mode=infer only; remove it or set mode=infer"},
        AnnotationErrorCase{"model=llama-2-7b,seq=4k", 1, ModelMode::kInfer,
                            "part \"seq=4k\": applies to mode=train only; remove it or set mode=train"},
        AnnotationErrorCase{"", 1, ModelMode::kTrain, "is empty; write e.g. \"params=7B,context=16k\""},
        AnnotationErrorCase{"  ", 1, ModelMode::kTrain, "is empty; write e.g. \"params=7B,context=16k\""}));

TEST(ModelAnnotation, ErrorReadsAfterThePodAndAnnotationPrefix) {
  auto parsed = parse_model("params=7B,zero=4", policy(), ModelMode::kTrain, 2);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ("pod ml-team/x: annotation " + std::string(kModelKey) + " " + parsed.error(),
            "pod ml-team/x: annotation gpu-sizer.io/model part \"zero=4\": must be 0, 1, 2 or 3");
}

}  // namespace
}  // namespace gpusizer::model_fit_test
