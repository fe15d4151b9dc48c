// The GPU memory components that come from a model's shape (model=NAME or
// the shape keys): the adapter's size from its rank, the KV cache, the
// activations of a micro-batch, ZeRO-3's gathered layer, 8-bit and paged
// optimizers, DeepSpeed's offload and vLLM's --gpu-memory-utilization.
// Each expected number is worked out in its comment from the model's
// config.json (src/sizing/default_policy.yaml) and the cited formula.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "gpusizer/sizing/model_fit.h"
#include "gpusizer/sizing/policy.h"

namespace gpusizer::model_shape_test {
namespace {

const GpuMemoryPolicy& policy() { return default_policy().rule_settings.get<GpuMemoryPolicy>(); }

ModelSpec parse_ok(const std::string& text, int64_t pod_gpus = 1, ModelMode mode = ModelMode::kTrain) {
  auto parsed = parse_model(text, policy(), mode, pod_gpus);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error());
  return parsed.ok() ? parsed.value() : ModelSpec{};
}

VramNeed need_of(const std::string& text, int64_t gpus = 1, ModelMode mode = ModelMode::kTrain) {
  return vram_per_gpu(policy(), parse_ok(text, gpus, mode), gpus);
}

TEST(ModelShape, ANamedModelGivesItsPublishedParameterCount) {
  const ModelSpec spec = parse_ok("model=llama-2-7b");
  EXPECT_EQ(spec.params, 6'738'415'616);
  ASSERT_TRUE(spec.shape);
  EXPECT_EQ(spec.shape->layers, 32);
  // params= wins over the table's count; the shape stays.
  const ModelSpec given = parse_ok("model=llama-2-7b,params=7B");
  EXPECT_EQ(given.params, 7'000'000'000);
  EXPECT_EQ(given.shape->hidden, 4096);
}

TEST(ModelShape, TheMessageNamesTheModelAsTheAnnotationDoes) {
  const GpuModel gpu{"GPU-24", Quantity::from_bytes(24'000'000'000), {}};
  const VramCheck check =
      check_vram(policy(), parse_ok("model=llama-3-8b,method=lora,rank=16,seq=4k,batch=2", 1), 1, gpu, "");
  EXPECT_TRUE(check.message.starts_with("model=llama-3-8b method=lora zero=0 rank=16 batch=2 seq=4k needs "))
      << check.message;
  EXPECT_TRUE(check.brief.starts_with("model llama-3-8b lora: ")) << check.brief;
}

TEST(ModelShape, ShapeKeysOverrideTheNamedModel) {
  const ModelSpec spec = parse_ok("model=llama-2-7b,layers=40,vocab=64000");
  EXPECT_EQ(spec.shape->layers, 40);
  EXPECT_EQ(spec.shape->largest_layer, 64000 * 4096);  // the embedding, rederived
  const ModelSpec alone =
      parse_ok("params=3B,layers=26,hidden=3072,heads=24,kvheads=8,headdim=128,intermediate=8192,vocab=128256");
  ASSERT_TRUE(alone.shape);
  EXPECT_EQ(alone.shape->kv_heads, 8);
}

// LoRA trains r x (in + out) per wrapped linear layer. PEFT prints
// "trainable params: 4,194,304" for Llama-2-7b at r=8 on q_proj, v_proj
// (its default): 8 x (4096+4096) x 2 x 32 layers. With every linear layer
// at r=64 (QLoRA's setup), 64 x (4 x 8192 + 3 x (4096+11008)) x 32 =
// 159,907,840, as PEFT prints for that configuration.
TEST(ModelShape, AnAdaptersSizeComesFromItsRank) {
  const VramNeed qv = need_of("model=llama-2-7b,method=lora,rank=8");
  EXPECT_EQ(qv.optimizer, 4'194'304LL * 12);  // adamw: 12 bytes per trained parameter
  EXPECT_EQ(qv.gradients, 4'194'304LL * 2);
  const VramNeed all = need_of("model=llama-2-7b,method=lora,rank=64,targets=all");
  EXPECT_EQ(all.optimizer, 159'907'840LL * 12);
  // Mixtral: every expert's MLP is wrapped: 3 x (4096+14336) x 8 experts.
  const VramNeed moe = need_of("model=mixtral-8x7b,method=lora,rank=1,targets=all");
  EXPECT_EQ(moe.gradients, ((4096 + 4096) + (4096 + 1024) * 2 + (4096 + 4096) + 8 * 3 * (4096 + 14336)) * 32LL * 2);
}

// What needs a shape (rank, seq) or another key (targets needs rank; batch
// and checkpointing need seq) falls back to the allowances, and explain
// says what to add: an annotation is never refused for it.
TEST(ModelShape, WithoutTheShapeRankAndSeqFallBackToTheAllowances) {
  const VramNeed lora = need_of("params=7B,method=lora,rank=16");
  EXPECT_EQ(lora.optimizer, need_of("params=7B,method=lora").optimizer);  // adapterShare 1%
  EXPECT_EQ(need_of("params=7B,seq=4k,batch=8").activations, need_of("params=7B").activations);
  EXPECT_EQ(need_of("model=llama-2-7b,method=lora,targets=all").optimizer,
            need_of("model=llama-2-7b,method=lora").optimizer);
  const GpuModel gpu{"GPU-80", Quantity::from_bytes(80'000'000'000), {}};
  const VramCheck check = check_vram(policy(), parse_ok("params=7B,method=lora,rank=16,batch=4"), 1, gpu, "");
  EXPECT_NE(check.parts[0].formula.find("rank needs the model's shape: model=NAME"), std::string::npos)
      << check.parts[0].formula;
  EXPECT_NE(check.parts[3].formula.find("batch and checkpointing apply with seq"), std::string::npos)
      << check.parts[3].formula;
}

// Llama 2 7B at 16 bits, batch 1, 4096 tokens: "1 * 4096 * 2 * 32 * 4096 *
// 2 bytes, which is ~2 GB" (NVIDIA, "Mastering LLM Techniques: Inference
// Optimization"). Grouped-query attention stores only the KV heads:
// Llama 3 8B has 8 of 32, a quarter of that per token.
TEST(ModelShape, TheKvCacheComesFromLayersKvHeadsAndHeadDim) {
  EXPECT_EQ(need_of("model=llama-2-7b,context=4096", 1, ModelMode::kInfer).context, 2'147'483'648);
  EXPECT_EQ(need_of("model=llama-3-8b,context=4096", 1, ModelMode::kInfer).context, 536'870'912);
  // seqs sequences at once hold seqs caches; tp splits them.
  EXPECT_EQ(need_of("model=llama-3-8b,context=4096,seqs=8,tp=2", 2, ModelMode::kInfer).context, 2'147'483'648);
  // Without a shape: seed 002's 1 GB per thousand tokens, per sequence.
  EXPECT_EQ(need_of("params=7B,context=4k,seqs=2", 1, ModelMode::kInfer).context, 8'000'000'000);
}

// Korthikanti et al. 2022: 34 x s x b x h bytes per layer (16-bit, no
// stored attention scores), 2sbh per layer with full checkpointing plus one
// layer recomputed, and 4 x s x b x vocab of fp32 logits.
TEST(ModelShape, ActivationsComeFromBatchSequenceAndShape) {
  const int64_t sbh = 2048LL * 4 * 4096;
  const int64_t logits = 4LL * 2048 * 4 * 32000;
  EXPECT_EQ(need_of("model=llama-2-7b,seq=2048,batch=4").activations, 34 * sbh * 32 + logits);
  EXPECT_EQ(need_of("model=llama-2-7b,seq=2048,batch=4,checkpointing=true").activations,
            2 * sbh * 32 + 34 * sbh + logits);
  // Activations are an allowance: they never make the certain part.
  const VramNeed need = need_of("model=llama-2-7b,seq=2048,batch=4");
  EXPECT_EQ(need.certain, need.weights + need.gradients + need.optimizer);
}

// DeepSpeed ZeRO-3 gathers a module whole: 4 x largest layer bytes on
// every GPU, certain; for a dense model the embedding (32000 x 4096).
TEST(ModelShape, ZeroThreeAddsTheGatheredLargestLayer) {
  const VramNeed need = need_of("model=llama-2-7b,zero=3", 8);
  EXPECT_EQ(need.gathered, 4LL * 32000 * 4096);
  EXPECT_EQ(need.certain - need.gathered, need.weights + need.gradients + need.optimizer);
  EXPECT_EQ(need_of("model=llama-2-7b,zero=2", 8).gathered, 0);
  EXPECT_EQ(need_of("params=7B,zero=3", 8).gathered, 0);  // no shape: not known, not guessed
  // LoRA's base is frozen: gathered without a gradient, 2 bytes; QLoRA's at
  // its quantized 0.516; tp splits the layer.
  EXPECT_EQ(need_of("model=llama-2-7b,method=lora,zero=3", 8).gathered, 2LL * 32000 * 4096);
  EXPECT_EQ(need_of("model=llama-2-7b,method=qlora,zero=3", 8).gathered, 516LL * 32000 * 4096 / 1000);
  EXPECT_EQ(need_of("model=llama-2-7b,zero=3,tp=2", 8).gathered, 2LL * 32000 * 4096);
}

// 8-bit Adam keeps two 1-byte moments beside fp32 master weights (6
// bytes); a paged optimizer's moments may page out to host memory, so they
// are an allowance, not certain.
TEST(ModelShape, EightBitAndPagedOptimizers) {
  EXPECT_EQ(need_of("params=1B,optimizer=adamw-8bit").optimizer, 6'000'000'000);
  EXPECT_EQ(need_of("params=1B,optimizer=sgd").optimizer, 8'000'000'000);
  // Pure bf16: two bf16 moments, no fp32 master copy.
  EXPECT_EQ(need_of("params=1B,optimizer=adamw-bf16").optimizer, 4'000'000'000);
  const VramNeed torchtune = need_of("params=1B,optimizer=paged-adamw-8bit-bf16");
  EXPECT_EQ(torchtune.optimizer, 0);
  EXPECT_EQ(torchtune.pageable, 2'000'000'000);
  const VramNeed paged = need_of("params=1B,optimizer=paged-adamw");
  EXPECT_EQ(paged.optimizer, 4'000'000'000);
  EXPECT_EQ(paged.pageable, 8'000'000'000);
  EXPECT_EQ(paged.certain, paged.weights + paged.gradients + paged.optimizer);
  EXPECT_EQ(paged.total, paged.certain + paged.pageable + paged.activations + paged.overhead);
}

// DeepSpeed's estimators: ZeRO-2 with offload_optimizer keeps 2 bytes a
// parameter on the GPU; ZeRO-3 with offload_optimizer 4L + 2P/N, with
// offload_param too 4L. Host memory holds 16 bytes a trained parameter
// (fp32 weights, gradients and two moments), 18 with the weights.
TEST(ModelShape, OffloadMovesStateToHostMemory) {
  const int64_t p = 6'738'415'616;
  const int64_t largest = 4LL * 32000 * 4096;
  const VramNeed zero2 = need_of("model=llama-2-7b,zero=2,offload=optimizer", 8);
  EXPECT_EQ(zero2.certain, 2 * p);
  EXPECT_EQ(zero2.host, 16 * p / 8);
  const VramNeed zero3 = need_of("model=llama-2-7b,zero=3,offload=optimizer", 8);
  EXPECT_EQ(zero3.certain, largest + 2 * p / 8);
  const VramNeed all = need_of("model=llama-2-7b,zero=3,offload=all", 8);
  EXPECT_EQ(all.certain, largest);
  EXPECT_EQ(all.host, 18 * p / 8);
  EXPECT_EQ(need_of("model=llama-2-7b,zero=3", 8).host, 0);
  // ZeRO-Infinity's NVMe offload: off the GPU as offload=all, and off host memory.
  const VramNeed nvme = need_of("model=llama-2-7b,zero=3,offload=nvme", 8);
  EXPECT_EQ(nvme.certain, largest);
  EXPECT_EQ(nvme.host, 0);
}

// vLLM allocates --gpu-memory-utilization of the GPU up front: the weights
// must fit in that share, and it replaces the safety margin.
TEST(ModelShape, VllmsShareOfTheGpuIsWhatTheModelMayUse) {
  const GpuModel gpu{"GPU-48", Quantity::from_bytes(48'000'000'000), {}};
  ModelSpec spec = parse_ok("params=20B,context=1k", 1, ModelMode::kInfer);        // weights 40 GB
  EXPECT_EQ(check_vram(policy(), spec, 1, gpu, "").verdict, VramVerdict::kTight);  // 42 GB > 0.85 x 48
  spec.reserved_share = 900;                                                       // 43.2 GB
  EXPECT_EQ(check_vram(policy(), spec, 1, gpu, "").verdict, VramVerdict::kFits);
  spec.reserved_share = 800;  // 38.4 GB: the weights alone do not fit
  const VramCheck check = check_vram(policy(), spec, 1, gpu, "");
  EXPECT_EQ(check.verdict, VramVerdict::kTooLarge);
  EXPECT_NE(check.message.find("38.4 GB usable at vLLM --gpu-memory-utilization 0.8"), std::string::npos)
      << check.message;
  // The brief says what the denial is against, and the least share that
  // holds the 42 GB total is offered: 42 / 48 = 0.875.
  EXPECT_EQ(check.brief, "model 20B infer: 40.0 GB/GPU certain, GPU-48 has 38.4 GB at --gpu-memory-utilization 0.8");
  EXPECT_NE(check.message.find("; --gpu-memory-utilization 0.875: 42.0 GB/GPU;"), std::string::npos) << check.message;
}

// The largest sizes the annotation accepts stay within the arithmetic
// (int128, saturating at int64): a denial, not a wrap-around or a crash.
TEST(ModelShape, TheLargestAcceptedSizesAreDeniedNotOverflowed) {
  const std::string huge_shape =
      "params=100000B,layers=1000000,hidden=1000000,heads=1000000,kvheads=1000000,headdim=1000000,"
      "intermediate=1000000,vocab=1000000";
  const GpuModel gpu{"GPU-80", Quantity::from_bytes(80'000'000'000), {}};
  for (const std::string& text :
       {huge_shape + ",method=lora,rank=65536,targets=all,seq=10000k,batch=65536,tp=1000,pp=1000,ranks=1000000,zero=3",
        huge_shape + ",method=full,seq=10000k,batch=65536,checkpointing=true,zero=3,offload=all,ranks=1000000"}) {
    const ModelSpec spec = parse_ok(text, 8);
    const VramCheck check = check_vram(policy(), spec, 8, gpu, "");
    EXPECT_EQ(check.verdict, VramVerdict::kTooLarge) << text;
    EXPECT_GT(check.need.total, check.need.certain) << text;
  }
  const ModelSpec serve = parse_ok(huge_shape + ",context=10000k,seqs=1000000,pp=1000000", 1, ModelMode::kInfer);
  const VramNeed need = vram_per_gpu(policy(), serve, 1);
  EXPECT_GT(need.context, 0);
  EXPECT_GE(need.total, need.context);
}

// Model parallelism divides the model states by tp x pp; ZeRO shards what
// it shards over all ranks; activations divide by tp only (a pipeline's
// first stage keeps pp micro-batches of its layers in flight).
TEST(ModelShape, TensorAndPipelineParallelismSplitTheModel) {
  const VramNeed split = need_of("params=70B,tp=4,pp=2,ranks=16", 8);
  EXPECT_EQ(split.weights, 140'000'000'000 / 8);
  EXPECT_EQ(split.gradients, 140'000'000'000 / 8);
  EXPECT_EQ(split.optimizer, 840'000'000'000 / 8);
  EXPECT_EQ(split.activations, 140'000'000'000 / 4);  // 2 bytes a parameter (full), / tp
  const VramNeed sharded = need_of("params=70B,tp=4,pp=2,ranks=16,zero=1", 8);
  EXPECT_EQ(sharded.optimizer, 840'000'000'000 / 16);
  EXPECT_EQ(sharded.weights, 140'000'000'000 / 8);
  const VramNeed serve = need_of("params=70B,tp=4,pp=2,context=8k", 4, ModelMode::kInfer);
  EXPECT_EQ(serve.weights, 140'000'000'000 / 8);
  EXPECT_EQ(serve.context, 8'000'000'000 / 8);
}

TEST(ModelShape, ExplainPartsCarryEachComponentWithItsFormula) {
  const GpuModel gpu{"GPU-80", Quantity::from_bytes(80'000'000'000), {}};
  const VramCheck check = check_vram(
      policy(), parse_ok("model=llama-2-7b,zero=3,offload=optimizer,seq=4k", 8, ModelMode::kTrain), 8, gpu, "");
  std::vector<std::string> names;
  for (const VramPart& part : check.parts) names.push_back(part.name);
  EXPECT_EQ(names, (std::vector<std::string>{"weights", "gathered layer", "gradients", "optimizer", "activations",
                                             "overhead", "certain", "total", "capacity", "usable", "host (offload)"}));
  EXPECT_EQ(check.parts[0].bytes, check.need.weights);
  EXPECT_EQ(check.parts[0].formula, "6.74B params x 2 bytes (bf16) / 8 ranks (ZeRO-3)");
  EXPECT_EQ(check.parts[1].kind, "certain");
  EXPECT_EQ(check.parts[4].kind, "allowance");
  EXPECT_EQ(check.parts.back().bytes, check.need.host * 8);
  EXPECT_EQ(gib_text(check.parts[8].bytes), "74.51 GiB");
}

}  // namespace
}  // namespace gpusizer::model_shape_test
