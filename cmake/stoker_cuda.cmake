# The GPU stage's build switch. STOKER_WITH_CUDA (default ON) asks for it;
# it is enabled only when nvcc is found (PATH, CUDACXX, or
# /usr/local/cuda/bin/nvcc) and no sanitizer or fuzzer build is requested
# (nvcc does not take -fsanitize). The result is STOKER_CUDA_ENABLED. The
# CUDA runtime is linked statically (CUDA::cudart_static), so the module
# loads on machines without the toolkit; without a driver or a device,
# asking for device="cuda" fails with a clear error at run time.
option(STOKER_WITH_CUDA "Build the GPU stage when nvcc is found" ON)
set(STOKER_CUDA_ENABLED OFF)
if(STOKER_WITH_CUDA AND (NOT STOKER_SANITIZE STREQUAL "" OR STOKER_BUILD_FUZZERS))
  message(STATUS "stoker: GPU stage off in sanitizer/fuzzer builds (nvcc takes no -fsanitize)")
elseif(STOKER_WITH_CUDA)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # Ampere and Hopper SASS plus PTX for newer GPUs; "native" needs a GPU at
  # configure time, so it is not the default.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND EXISTS "${CMAKE_CUDA_COMPILER}")
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)  # kernels.cu needs no more; CMake 3.25 lacks nvcc C++20 flags
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    set(STOKER_CUDA_ENABLED ON)
    message(STATUS "stoker: GPU stage on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "stoker: nvcc not found, GPU stage off (device='cuda' will report it)")
  endif()
endif()
