// Copyright 2026 The stoker Authors.
//
// folder_throughput: stoker from C++, through the installed package only.
// Opens an ImageFolder (one sub-directory per class), makes a Loader with a
// RandomResizedCrop + RandomHorizontalFlip + Normalize pipeline, iterates
// some epochs and prints the images/s of each and of all of them.
//
//   folder_throughput DIR [--epochs N] [--batch-size B] [--threads T] [--size S] [--seed S]
//
// Output, one line per epoch then a total (the test in scripts/consumer_test.sh reads it):
//   source: ImageFolder(DIR, 2 classes, 16 images)
//   epoch 0: 16 images, 4 batches, 0.031 s, 516.1 images/s
//   total: 32 images, 2 epochs, 0.060 s, 533.3 images/s
//
// Build: examples/CMakeLists.txt, in stoker's own build (STOKER_BUILD_EXAMPLES) or as a
// project of its own against an installed stoker (find_package(stoker CONFIG)).
// Errors: a message on stderr and exit status 1 (2 for bad arguments).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "stoker/loader.h"
#include "stoker/sources.h"
#include "stoker/status.h"
#include "stoker/transforms.h"
#include "stoker/version.h"

namespace {

struct Args {
  std::string folder;
  int epochs = 3;
  int batch_size = 64;
  int threads = 0;  // one per core
  int size = 224;
  uint64_t seed = 0;
};

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s DIR [--epochs N] [--batch-size B] [--threads T] [--size S] "
               "[--seed S]\n",
               argv0);
  return 2;
}

// Parses argv into *args; false on a bad or missing argument.
bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      if (!args->folder.empty()) return false;
      args->folder = a;
      continue;
    }
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    long long v = std::strtoll(argv[++i], &end, 10);
    if (*end != '\0' || v < 0) return false;
    if (a == "--epochs") {
      args->epochs = static_cast<int>(v);
    } else if (a == "--batch-size") {
      args->batch_size = static_cast<int>(v);
    } else if (a == "--threads") {
      args->threads = static_cast<int>(v);
    } else if (a == "--size") {
      args->size = static_cast<int>(v);
    } else if (a == "--seed") {
      args->seed = static_cast<uint64_t>(v);
    } else {
      return false;
    }
  }
  return !args->folder.empty() && args->epochs > 0 && args->batch_size > 0 && args->size > 0;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Iterates args.epochs epochs, printing one line each and a total.
stoker::Status Run(const Args& args) {
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<stoker::ImageFolder> folder,
                          stoker::ImageFolder::Open(args.folder));
  std::printf("source: %s\n", folder->Describe().c_str());

  stoker::LoaderOptions options;
  options.batch_size = args.batch_size;
  options.shuffle = true;
  options.seed = args.seed;
  options.threads = args.threads;
  options.transforms = {stoker::Transform::RandomResizedCrop(args.size, args.size),
                        stoker::Transform::RandomHorizontalFlip(),
                        stoker::Transform::Normalize({0.485f, 0.456f, 0.406f},
                                                     {0.229f, 0.224f, 0.225f})};
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<stoker::Loader> loader,
                          stoker::Loader::Create(folder, options));

  int64_t total_images = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < args.epochs; ++epoch) {
    const auto epoch_start = std::chrono::steady_clock::now();
    loader->SetEpoch(epoch);
    STOKER_RETURN_IF_ERROR(loader->Start());
    int64_t images = 0;
    int64_t batches = 0;
    for (;;) {
      stoker::BatchPtr batch;
      bool end = false;
      STOKER_RETURN_IF_ERROR(loader->Next(&batch, &end));
      if (end) break;
      images += batch->size();  // a training step would read batch->images() here
      ++batches;
    }
    const double s = Seconds(epoch_start);
    std::printf("epoch %d: %lld images, %lld batches, %.3f s, %.1f images/s\n", epoch,
                static_cast<long long>(images), static_cast<long long>(batches), s,
                s > 0 ? images / s : 0.0);
    total_images += images;
  }
  const double s = Seconds(start);
  std::printf("total: %lld images, %d epochs, %.3f s, %.1f images/s\n",
              static_cast<long long>(total_images), args.epochs, s,
              s > 0 ? total_images / s : 0.0);
  return stoker::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return Usage(argv[0]);
  std::printf("stoker %s\n", STOKER_VERSION_STRING);
  stoker::Status status = Run(args);
  if (!status.ok()) {
    std::fprintf(stderr, "folder_throughput: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
