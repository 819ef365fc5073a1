// Copyright 2026 The stoker Authors.
#include "cuda/kernels.h"

#include <algorithm>

namespace stoker::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void GreySumsKernel(const uint8_t* in, int64_t pixels, unsigned long long* sums) {
  const int n = blockIdx.y;
  const uint8_t* img = in + static_cast<int64_t>(n) * pixels * 3;
  unsigned long long local = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < pixels;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    local += device::GreyLevel(img[3 * i], img[3 * i + 1], img[3 * i + 2]);
  }
  __shared__ unsigned long long block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  atomicAdd(&block_sum, local);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&sums[n], block_sum);
}

__global__ void TransformKernel(const uint8_t* in, device::BatchGeometry g,
                                const device::SampleParams* params,
                                const unsigned long long* grey_sums, void* out) {
  const int n = blockIdx.y;
  const int64_t pixel = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= static_cast<int64_t>(g.out_height) * g.out_width) return;
  device::SampleParams p = params[n];
  if (grey_sums != nullptr && p.contrast != 1.f) {
    p.grey_mean = device::GreyMeanFromSum(grey_sums[n], g.in_height, g.in_width);
  }
  const uint8_t* sample = in + static_cast<int64_t>(n) * g.in_height * g.in_width * 3;
  device::TransformPixel(sample, g, p, n, static_cast<int>(pixel / g.out_width),
                         static_cast<int>(pixel % g.out_width), out);
}

__global__ void CopyLabelsKernel(const int64_t* in, int n, int64_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

template <typename Word>
__global__ void CopyWordsKernel(const Word* in, size_t count, Word* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = in[i];
  }
}

template <typename Word>
cudaError_t LaunchCopyWords(const void* in, size_t count, void* out, cudaStream_t stream) {
  const size_t blocks = std::min<size_t>((count + kThreads - 1) / kThreads, 1024);
  CopyWordsKernel<Word><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const Word*>(in), count, static_cast<Word*>(out));
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchCopyBytes(const void* in, size_t bytes, void* out, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  const bool words = reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(out) % 16 == 0 && bytes % 16 == 0;
  if (words) return LaunchCopyWords<uint4>(in, bytes / 16, out, stream);
  return LaunchCopyWords<unsigned char>(in, bytes, out, stream);
}

cudaError_t LaunchCopyLabels(const int64_t* in, int n, int64_t* out, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  CopyLabelsKernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(in, n, out);
  return cudaGetLastError();
}

cudaError_t LaunchGreySums(const uint8_t* in, int n, int height, int width,
                           unsigned long long* sums, cudaStream_t stream) {
  const int64_t pixels = static_cast<int64_t>(height) * width;
  const int blocks = static_cast<int>(std::min<int64_t>((pixels + kThreads - 1) / kThreads, 64));
  GreySumsKernel<<<dim3(blocks, n), kThreads, 0, stream>>>(in, pixels, sums);
  return cudaGetLastError();
}

cudaError_t LaunchTransformBatch(const uint8_t* in, int n, const device::BatchGeometry& geometry,
                                 const device::SampleParams* params,
                                 const unsigned long long* grey_sums, void* out,
                                 cudaStream_t stream) {
  const int64_t pixels = static_cast<int64_t>(geometry.out_height) * geometry.out_width;
  const int blocks = static_cast<int>((pixels + kThreads - 1) / kThreads);
  TransformKernel<<<dim3(blocks, n), kThreads, 0, stream>>>(in, geometry, params, grey_sums, out);
  return cudaGetLastError();
}

}  // namespace stoker::cuda
