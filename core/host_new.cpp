// The program's operator new: the library's, except that when the host runs out of memory the exception says
// how much was asked. std::bad_alloc's own message is just "std::bad_alloc", so a std::vector that a reader
// or the loader grows past a memory limit (ulimit -v, a cgroup) ended cnn_train with a line that said
// neither what nor how much (found by scripts/faults.sh, kind memory). Host tensors go through
// core/allocator.cpp, which says so itself.
//
// Left out under AddressSanitizer, whose own operator new reports the size and checks new/delete pairs.

#include <cstdio>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define ENGINE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ENGINE_ASAN 1
#endif
#endif

#ifndef ENGINE_ASAN
namespace {

class HostOutOfMemory : public std::bad_alloc {
 public:
  explicit HostOutOfMemory(std::size_t bytes) {
    // No std::string: there is no memory to build one.
    std::snprintf(message_, sizeof message_, "host out of memory: asked for %zu bytes (%.1f MiB)", bytes,
                  static_cast<double>(bytes) / (1024.0 * 1024.0));
  }
  const char* what() const noexcept override { return message_; }

 private:
  char message_[96] = {};
};

void* allocate(std::size_t bytes) {
  for (;;) {
    if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
    std::new_handler handler = std::get_new_handler();  // the standard's retry protocol
    if (handler == nullptr) throw HostOutOfMemory(bytes);
    handler();
  }
}

}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes); }
void* operator new[](std::size_t bytes) { return allocate(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif
