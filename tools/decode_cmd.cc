// Copyright 2026 The stoker Authors.
//
// `stoker decode DATA [--threads N] [--epochs N] [--json]`: the full-decode
// ceiling of an image folder.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_checks.h"
#include "cli_support.h"
#include "command.h"
#include "loader_flags.h"
#include "stoker/decode.h"
#include "stoker/process.h"
#include "stoker/sources.h"

namespace stoker {
namespace {

// The full-decode ceiling: every file read and fully decoded with
// libjpeg-turbo / libpng (no region decode, no scaling, no transforms),
// `threads` threads each taking the next file. Median of `epochs` passes
// after a warm-up pass.
int CmdDecode(const std::string& data, int threads, int epochs, bool json) {
  auto folder = ImageFolder::Open(data);
  if (!folder.ok()) return ReportError("decode", folder.status(), json);
  const std::shared_ptr<ImageFolder> f = folder.value();
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<double> rates;
  std::atomic<int64_t> failures{0};
  const double cpu0 = CpuSeconds();
  for (int e = 0; e <= epochs; ++e) {
    std::atomic<int64_t> next{0};
    const double t0 = NowSeconds();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, e] {
        Decoder decoder;
        SampleScratch scratch;
        for (int64_t i; (i = next.fetch_add(1)) < f->size();) {
          SampleData s;
          DecodedImage image;
          if (!f->ReadIndex(i, &scratch, &s).ok() ||
              !decoder.Decode(s.bytes, s.size, &image).ok()) {
            if (e == 0) failures.fetch_add(1);  // files that fail: counted in one pass
          }
        }
      });
    }
    for (auto& t : pool) t.join();
    if (e > 0) rates.push_back(f->size() / (NowSeconds() - t0));
  }
  const double cpu = CpuSeconds() - cpu0;
  std::sort(rates.begin(), rates.end());
  const double rate = rates[rates.size() / 2];
  if (json) {
    std::printf("{\"tool\": \"decode\", \"threads\": %d, \"images\": %lld, "
                "\"images_per_sec\": %.2f, "
                "\"cpu_s_per_1000\": %.4f, \"failures\": %lld}\n",
                threads, static_cast<long long>(f->size()), rate,
                cpu / (f->size() * (epochs + 1)) * 1000, static_cast<long long>(failures.load()));
  } else {
    std::printf("full decode (libjpeg-turbo/libpng, no transforms), %d threads: %.1f images/s "
                "(median of %d passes), %lld failures\n",
                threads, rate, epochs, static_cast<long long>(failures.load()));
  }
  return 0;
}

class DecodeCommand : public Command {
 public:
  explicit DecodeCommand(CLI::App* app)
      : Command(app->add_subcommand(
            "decode", "Measure the full-decode ceiling: read and fully decode every image of a "
                      "folder (no region decode, no transforms), one thread per core by "
                      "default.")) {
    CLI::App* s = sub();
    s->add_option("DATA", data_, "ImageFolder root")->required()->check(CLI::ExistingDirectory);
    s->add_option("--threads", threads_, "decoding threads (0: one per core)")
        ->capture_default_str()->check(kNonNegative);
    s->add_option("--epochs", epochs_, "timed passes after a warm-up pass")
        ->capture_default_str()->check(kPositive);
    s->add_flag("--json", json_, "print one JSON object");
  }

  int Run() override { return CmdDecode(data_, threads_, epochs_, json_); }

 private:
  std::string data_;
  int threads_ = 0, epochs_ = 3;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> AddDecodeCommand(CLI::App* app) {
  return std::make_unique<DecodeCommand>(app);
}

}  // namespace stoker
