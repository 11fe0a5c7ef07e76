# Third-party libraries, all from Debian's packages (scripts/install-deps.sh installs them; on a GPU machine
# without them, the same packages unpacked in .deps/root by scripts/fetch-gpu-deps.sh are the first prefix).
# A missing one stops the configure step with the package to install.

function(engine_require_package pkg debian_package)
  find_package(${pkg} ${ARGN} QUIET)
  if(NOT ${pkg}_FOUND)
    message(FATAL_ERROR "cnn_engine: ${pkg} not found. Install the Debian package '${debian_package}' "
                        "(scripts/install-deps.sh installs everything the build needs).")
  endif()
endfunction()

engine_require_package(ZLIB zlib1g-dev)
engine_require_package(fmt libfmt-dev)
engine_require_package(nlohmann_json nlohmann-json3-dev)
engine_require_package(CLI11 libcli11-dev)
engine_require_package(Threads build-essential)
if(ENGINE_BUILD_TESTS)
  engine_require_package(GTest libgtest-dev)
  engine_require_package(benchmark libbenchmark-dev)
endif()
engine_require_package(Gloo libgloo-dev)
# oneDNN: convolution and GEMM of the fast float32 CPU path (kernels/cpu_fast), the library PyTorch uses on
# CPUs. Debian's dnnl-config.cmake asks for the OpenCL headers and loader (its GPU runtime), which the CPU
# path never uses and libdnnl-dev does not pull in, so the header and library are found directly.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(DNNL_LIBRARY NAMES dnnl)
if(NOT DNNL_INCLUDE_DIR OR NOT DNNL_LIBRARY)
  message(FATAL_ERROR "cnn_engine: oneDNN not found. Install the Debian package 'libdnnl-dev' "
                      "(scripts/install-deps.sh installs everything the build needs).")
endif()
add_library(engine::dnnl INTERFACE IMPORTED GLOBAL)
set_target_properties(engine::dnnl PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}"
                                              INTERFACE_LINK_LIBRARIES "${DNNL_LIBRARY}")
# LAPACKE (LAPACK's C interface; liblapacke-dev pulls in the reference LAPACK and BLAS): the host
# eigendecomposition of the patch-whitening initialisation (layers/patch_whitening.h). Found directly, as
# oneDNN: Debian ships no CMake config for it.
find_path(LAPACKE_INCLUDE_DIR lapacke.h)
find_library(LAPACKE_LIBRARY NAMES lapacke)
if(NOT LAPACKE_INCLUDE_DIR OR NOT LAPACKE_LIBRARY)
  message(FATAL_ERROR "cnn_engine: LAPACKE not found (lapacke.h: ${LAPACKE_INCLUDE_DIR}, liblapacke: "
                      "${LAPACKE_LIBRARY}). Install the Debian package 'liblapacke-dev' "
                      "(scripts/install-deps.sh installs everything the build needs; on a GPU machine, "
                      "scripts/fetch-gpu-deps.sh packs it).")
endif()
add_library(engine::lapacke INTERFACE IMPORTED GLOBAL)
set_target_properties(engine::lapacke PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${LAPACKE_INCLUDE_DIR}"
                                                 INTERFACE_LINK_LIBRARIES "${LAPACKE_LIBRARY}")
# OpenMP (gcc's libgomp, the runtime Debian's oneDNN is built on): the threaded loops of kernels/cpu_fast.
engine_require_package(OpenMP build-essential COMPONENTS CXX)

# libjpeg-turbo's TurboJPEG API decodes JPEG (data/jpeg_decoder.h): stb_image 2.27's JPEG decoder reads out of
# bounds on a scan that ends early (nothings/stb#1293). Found directly, as oneDNN.
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h)
find_library(TURBOJPEG_LIBRARY NAMES turbojpeg)
if(NOT TURBOJPEG_INCLUDE_DIR OR NOT TURBOJPEG_LIBRARY)
  message(FATAL_ERROR "cnn_engine: TurboJPEG not found. Install the Debian package 'libturbojpeg0-dev' "
                      "(scripts/install-deps.sh installs everything the build needs; on a GPU machine, "
                      "scripts/fetch-gpu-deps.sh packs it).")
endif()
add_library(engine::turbojpeg INTERFACE IMPORTED GLOBAL)
set_target_properties(engine::turbojpeg PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TURBOJPEG_INCLUDE_DIR}"
                                                   INTERFACE_LINK_LIBRARIES "${TURBOJPEG_LIBRARY}")

# stb ships headers only (plus libstb.so, which we do not need: one translation unit defines the code).
find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb)
if(NOT STB_INCLUDE_DIR)
  message(FATAL_ERROR "cnn_engine: stb_image.h not found. Install the Debian package 'libstb-dev'.")
endif()
add_library(engine::stb INTERFACE IMPORTED GLOBAL)
set_target_properties(engine::stb PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${STB_INCLUDE_DIR})
