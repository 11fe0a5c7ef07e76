// An LD_PRELOAD library that makes one chosen file call fail with EIO, for the I/O-error faults of
// scripts/faults.sh and tests/cpu/cnn_train_io_error_test.cpp (a disk that fails where a full one would not).
//
//   ENGINE_IO_FAULT_PATH    calls on a path containing this text (or on a descriptor opened from one) count
//   ENGINE_IO_FAULT_OP      the call that fails: open, read, write, fsync, rename or close
//   ENGINE_IO_FAULT_NTH     the Nth counted call of that kind fails (1 the first); 0 or unset: none, count
//   only ENGINE_IO_FAULT_COUNTS  a file that gets, at exit, each kind's count ("write 12"): what N can be
//
// The failed call is told on stderr ("io_error_shim: write('PATH') failed with EIO, call N"), so a caller
// can tell which file met the fault. fread and fwrite are interposed too: glibc's stdio calls read and write
// inside libc, past this library.
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <unistd.h>

namespace {

enum Op { kOpen, kRead, kWrite, kFsync, kRename, kClose, kOps };
const char* const kOpNames[kOps] = {"open", "read", "write", "fsync", "rename", "close"};

constexpr int kMaxFd = 4096;

struct State {
  std::string path;  // empty: the shim does nothing
  int op = -1;
  long nth = 0;
  std::atomic<long> counts[kOps] = {};
  std::mutex mutex;
  std::string fd_paths[kMaxFd];  // the counted descriptors' paths (empty: not counted)
};

State& state() {
  static State* s = [] {
    auto* st = new State;  // never freed: calls may come during exit
    const char* path = std::getenv("ENGINE_IO_FAULT_PATH");
    const char* op = std::getenv("ENGINE_IO_FAULT_OP");
    const char* nth = std::getenv("ENGINE_IO_FAULT_NTH");
    if (path != nullptr) st->path = path;
    for (int i = 0; op != nullptr && i < kOps; ++i)
      if (std::strcmp(op, kOpNames[i]) == 0) st->op = i;
    if (nth != nullptr) st->nth = std::strtol(nth, nullptr, 10);
    return st;
  }();
  return *s;
}

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

bool matches(const char* path) {
  const State& s = state();
  return !s.path.empty() && path != nullptr && std::strstr(path, s.path.c_str()) != nullptr;
}

std::string path_of_fd(int fd) {
  if (fd < 0 || fd >= kMaxFd) return {};
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().fd_paths[fd];
}

void remember_fd(int fd, const char* path) {
  if (fd < 0 || fd >= kMaxFd || !matches(path)) return;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fd_paths[fd] = path;
}

// Counts a call of `op` on `path` (empty: not a counted file); true when this one is to fail (errno set).
bool inject(Op op, const std::string& path) {
  if (path.empty()) return false;
  State& s = state();
  const long n = ++s.counts[op];
  if (s.op != op || s.nth <= 0 || n != s.nth) return false;
  std::fprintf(stderr, "io_error_shim: %s('%s') failed with EIO, call %ld\n", kOpNames[op], path.c_str(), n);
  errno = EIO;
  return true;
}

void write_counts() {
  const char* file = std::getenv("ENGINE_IO_FAULT_COUNTS");
  if (file == nullptr || state().path.empty()) return;
  using Fopen = FILE* (*)(const char*, const char*);
  FILE* out = real<Fopen>("fopen")(file, "w");
  if (out == nullptr) return;
  for (int i = 0; i < kOps; ++i) std::fprintf(out, "%s %ld\n", kOpNames[i], state().counts[i].load());
  std::fclose(out);
}

struct CountsAtExit {
  ~CountsAtExit() { write_counts(); }
} counts_at_exit;

int open_common(const char* name, int dirfd, const char* path, int flags, mode_t mode) {
  if (matches(path) && inject(kOpen, path)) return -1;
  int fd;
  if (dirfd == -1) {
    using Open = int (*)(const char*, int, ...);
    fd = real<Open>(name)(path, flags, mode);
  } else {
    using OpenAt = int (*)(int, const char*, int, ...);
    fd = real<OpenAt>(name)(dirfd, path, flags, mode);
  }
  remember_fd(fd, path);
  return fd;
}

mode_t mode_arg(int flags, va_list args) {
  return (flags & (O_CREAT | O_TMPFILE)) != 0 ? static_cast<mode_t>(va_arg(args, int)) : 0;
}

}  // namespace

extern "C" {

int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_arg(flags, args);
  va_end(args);
  return open_common("open", -1, path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_arg(flags, args);
  va_end(args);
  return open_common("open64", -1, path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const mode_t mode = mode_arg(flags, args);
  va_end(args);
  return open_common("openat", dirfd, path, flags, mode);
}

FILE* fopen(const char* path, const char* how) {
  if (matches(path) && inject(kOpen, path)) return nullptr;
  using Fopen = FILE* (*)(const char*, const char*);
  FILE* f = real<Fopen>("fopen")(path, how);
  if (f != nullptr) remember_fd(::fileno(f), path);
  return f;
}

FILE* fopen64(const char* path, const char* how) {
  if (matches(path) && inject(kOpen, path)) return nullptr;
  using Fopen = FILE* (*)(const char*, const char*);
  FILE* f = real<Fopen>("fopen64")(path, how);
  if (f != nullptr) remember_fd(::fileno(f), path);
  return f;
}

ssize_t read(int fd, void* buffer, size_t size) {
  if (inject(kRead, path_of_fd(fd))) return -1;
  using Read = ssize_t (*)(int, void*, size_t);
  return real<Read>("read")(fd, buffer, size);
}

size_t fread(void* buffer, size_t size, size_t count, FILE* f) {
  if (inject(kRead, path_of_fd(::fileno(f)))) {
    f->_flags |= _IO_ERR_SEEN;  // what ferror reads
    return 0;
  }
  using Fread = size_t (*)(void*, size_t, size_t, FILE*);
  return real<Fread>("fread")(buffer, size, count, f);
}

ssize_t write(int fd, const void* buffer, size_t size) {
  if (inject(kWrite, path_of_fd(fd))) return -1;
  using Write = ssize_t (*)(int, const void*, size_t);
  return real<Write>("write")(fd, buffer, size);
}

size_t fwrite(const void* buffer, size_t size, size_t count, FILE* f) {
  if (inject(kWrite, path_of_fd(::fileno(f)))) {
    f->_flags |= _IO_ERR_SEEN;
    return 0;
  }
  using Fwrite = size_t (*)(const void*, size_t, size_t, FILE*);
  return real<Fwrite>("fwrite")(buffer, size, count, f);
}

int fsync(int fd) {
  if (inject(kFsync, path_of_fd(fd))) return -1;
  using Fsync = int (*)(int);
  return real<Fsync>("fsync")(fd);
}

int fdatasync(int fd) {
  if (inject(kFsync, path_of_fd(fd))) return -1;
  using Fsync = int (*)(int);
  return real<Fsync>("fdatasync")(fd);
}

int rename(const char* from, const char* to) {
  if (matches(from) || matches(to)) {
    if (inject(kRename, matches(to) ? to : from)) return -1;
  }
  using Rename = int (*)(const char*, const char*);
  return real<Rename>("rename")(from, to);
}

int close(int fd) {
  const std::string path = path_of_fd(fd);
  if (!path.empty()) {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().fd_paths[fd].clear();
  }
  using Close = int (*)(int);
  const int rc = real<Close>("close")(fd);  // the descriptor is gone either way, as Linux's close does
  if (inject(kClose, path)) return -1;
  return rc;
}

int fclose(FILE* f) {
  const int fd = ::fileno(f);
  const std::string path = path_of_fd(fd);
  if (!path.empty()) {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().fd_paths[fd].clear();
  }
  using Fclose = int (*)(FILE*);
  const int rc = real<Fclose>("fclose")(f);
  if (inject(kClose, path)) return -1;
  return rc;
}

}  // extern "C"
