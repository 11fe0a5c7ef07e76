# Third-party libraries, all from Debian's packages (scripts/install-deps.sh installs them; on a GPU machine
# without them, the same packages unpacked in .deps/root by scripts/fetch-gpu-deps.sh are the first prefix,
# with a relocatable OpenBLAS config). A missing one stops the configure step with the package to install.

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
# OpenBLAS: the float32 GEMM behind the fast CPU convolution and linear layers (kernels/cpu_fast).
engine_require_package(OpenBLAS libopenblas-dev CONFIG)
find_package(OpenBLAS CONFIG REQUIRED)  # again at file scope: the function's variables do not leave it
add_library(engine::openblas INTERFACE IMPORTED GLOBAL)
set_target_properties(engine::openblas PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
                                                  INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}")

# stb ships headers only (plus libstb.so, which we do not need: one translation unit defines the code).
find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb)
if(NOT STB_INCLUDE_DIR)
  message(FATAL_ERROR "cnn_engine: stb_image.h not found. Install the Debian package 'libstb-dev'.")
endif()
add_library(engine::stb INTERFACE IMPORTED GLOBAL)
set_target_properties(engine::stb PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${STB_INCLUDE_DIR})
