// Copyright 2026 The stoker Authors.
//
// What this process has used: CPU seconds, resident memory now and at its
// peak; the cores it may use. For benchmarks, `stoker bench` and `stoker
// tune` (Linux: /proc and getrusage). Thread-safe (they read the kernel's
// counters); ResetPeakRss changes process-wide state. No errors: a counter
// that cannot be read reads as 0.
#ifndef STOKER_PROCESS_H_
#define STOKER_PROCESS_H_

#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace stoker {

// Cores this process may run on (its CPU affinity mask; else the machine's).
inline int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// Cores process `pid` may run on (its affinity mask), 0 when it cannot be read.
inline int CoresOf(pid_t pid) {
  cpu_set_t set;
  if (sched_getaffinity(pid, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// This rank's share of the cores when `local_world_size` ranks share a machine:
// `mine` (this process's mask) divided among them, unless the mask is already
// the rank's own: narrower than its parent's (`parent`, the launcher's; 0 when
// unknown), which is what a launcher that pins each rank to its cores leaves
// (torchrun with CPU binding, numactl/taskset per rank, Slurm's --cpu-bind).
// At least 1. Pure.
inline int RankShareOfCores(int mine, int parent, int local_world_size) {
  if (mine < 1) mine = 1;
  if (local_world_size <= 1) return mine;
  if (parent > mine) return mine;  // the launcher narrowed this rank's mask
  const int share = mine / local_world_size;
  return share < 1 ? 1 : share;
}

// RankShareOfCores for this process (its mask and its parent's).
inline int DefaultRankCores(int local_world_size) {
  return RankShareOfCores(AvailableCores(), CoresOf(getppid()), local_world_size);
}

// User + system CPU seconds of all threads.
inline double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

// The whole machine's CPU time so far (Linux: /proc/stat's "cpu" line, in
// seconds): `busy_s` is everything but idle and iowait, `cpus` the number of
// "cpuN" lines. The difference of two reads over a wall-clock interval says
// how many cores were busy, with every process counted (for `stoker
// diagnose`'s CPU-contention check). All zero where /proc/stat is unreadable.
struct MachineCpu {
  double busy_s = 0;
  int cpus = 0;
};

inline MachineCpu ReadMachineCpu() {
  MachineCpu m;
  std::ifstream f("/proc/stat");
  std::string line;
  const double tick = sysconf(_SC_CLK_TCK) > 0 ? 1.0 / sysconf(_SC_CLK_TCK) : 0.01;
  while (std::getline(f, line)) {
    if (line.rfind("cpu ", 0) == 0) {
      unsigned long long v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // user nice system idle iowait irq softirq steal
      std::sscanf(line.c_str() + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                  &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
      m.busy_s = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tick;
    } else if (line.rfind("cpu", 0) == 0) {
      ++m.cpus;
    } else {
      break;
    }
  }
  return m;
}

inline double CurrentRssMiB() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return pages_rss * (sysconf(_SC_PAGESIZE) / 1048576.0);
}

// The resident high-water mark (VmHWM; since ResetPeakRss, where that works).
inline double PeakRssMiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

// Hands freed heap back to the kernel and lowers the high-water mark to the
// current RSS (Linux >= 4.0: /proc/self/clear_refs), so the next PeakRssMiB
// is what came after.
inline void ResetPeakRss() {
  malloc_trim(0);
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

// What one read of the monotonic clock behind the Loader's stage counters
// (std::chrono::steady_clock) costs here, in ns: the mean of 2^20 reads.
inline double ClockReadCostNs() {
  constexpr int kCalls = 1 << 20;
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  int64_t sink = 0;
  const int64_t t0 = now_ns();
  for (int i = 0; i < kCalls; ++i) sink += now_ns() & 1;
  const int64_t t1 = now_ns();
  return (t1 - t0 + (sink & 1)) / static_cast<double>(kCalls);
}

}  // namespace stoker

#endif  // STOKER_PROCESS_H_
