// Copyright 2026 The stoker Authors.
//
// The engine's NVTX ranges, seen by a tool: this binary links NVTX's static
// injection hook (InitializeInjectionNvtx2_fnptr, nvtxInit.h), the way a
// profiler's library would attach, and records the ranges the Loader opens
// with tracing off. Built only with CUDA (NVTX 3 from the toolkit).
// This file defines the hook; NVTX's header then leaves out its weak one.
#define NVTX_STATIC_INJECTION_IMPL 1
#include <cstdint>
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t));

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "source/memory_source.h"
#include "stoker/loader.h"
#include "testing/loader_fixtures.h"
#include "trace/nvtx.h"

namespace {

std::mutex g_mu;
std::string g_domain_name;
std::map<std::string, int> g_pushes;  // "domain:range" -> count
int g_pops = 0;
int g_unbalanced = 0;
thread_local int tl_depth = 0;
char g_domain_tag;
const nvtxDomainHandle_t kDomain = reinterpret_cast<nvtxDomainHandle_t>(&g_domain_tag);

nvtxDomainHandle_t NVTX_API CreateDomain(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_domain_name = name;
  return kDomain;
}

int NVTX_API Push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  std::lock_guard<std::mutex> lock(g_mu);
  const std::string d = domain == kDomain ? g_domain_name : "?";
  ++g_pushes[d + ":" + (a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?")];
  return ++tl_depth;
}

int NVTX_API Pop(nvtxDomainHandle_t) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_pops;
  if (--tl_depth < 0) ++g_unbalanced;
  return tl_depth;
}

int NVTX_API Init(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks == nullptr ||
      !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) {
    return 0;
  }
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&CreateDomain);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&Push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&Pop);
  return 1;
}

}  // namespace

// NVTX's loader binds its weak symbol to this definition.
extern "C" NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &Init;

namespace stoker {
namespace {

TEST(Nvtx, LoaderStagesAreRangesInTheStokerDomain) {
  ASSERT_TRUE(nvtx::kEnabled);
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 2;
  // One epoch's reads exactly: the next epoch's first batches, made ahead
  // while this one ends, would add a timing-dependent number.
  o.prefetch_next_epoch = false;
  o.transforms = {Transform::RandomResizedCrop(16, 16), Transform::ColorJitter({0.5, 1.5},
                                                                               {1, 1}, {1, 1},
                                                                               {0, 0})};
  auto loader = testing::MakeLoader(
      std::make_shared<MemorySource>(testing::JpegSamples(10)), o);
  ASSERT_NE(loader, nullptr);
  ASSERT_FALSE(loader->tracer()->on());  // NVTX does not need the span recorder
  const testing::Delivered d = testing::RunEpoch(loader.get());
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  loader.reset();
  std::lock_guard<std::mutex> lock(g_mu);
  EXPECT_EQ(g_domain_name, "stoker");
  EXPECT_EQ(g_pushes["stoker:read"], 10);
  EXPECT_EQ(g_pushes["stoker:decode"], 10);
  EXPECT_EQ(g_pushes["stoker:ColorJitter"], 10);
  EXPECT_EQ(g_pushes["stoker:stoker.hand-off"], 4);  // 3 batches and the end
  EXPECT_EQ(g_pushes["stoker:stoker.collate"], 3);
  int pushes = 0;
  for (const auto& [name, n] : g_pushes) {
    EXPECT_EQ(name.rfind("stoker:", 0), 0u) << name;
    pushes += n;
  }
  EXPECT_EQ(pushes, g_pops);
  EXPECT_EQ(g_unbalanced, 0);
}

}  // namespace
}  // namespace stoker
