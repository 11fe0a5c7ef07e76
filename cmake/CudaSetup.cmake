# Decides whether the CUDA device is built, and finds cuDNN and NCCL.
#
# cuDNN and NCCL are searched in CUDNN_ROOT / NCCL_ROOT, then the CUDA toolkit, then the Python packages
# nvidia-cudnn-cu13 / nvidia-nccl-cu13 (where PyTorch's pip wheels put them), then the system paths.
#
# CUDA architectures: the GPU in this machine when nvidia-smi sees one ("native"), else the default list
# below, which covers the GPUs people train on: T4 (75), A100 (80), A10/RTX 30xx (86), L4/RTX 40xx (89),
# H100/H200 (90). Override with -DCMAKE_CUDA_ARCHITECTURES=...
set(ENGINE_DEFAULT_CUDA_ARCHITECTURES "75;80;86;89;90")

set(ENGINE_HAVE_CUDA OFF)
if(NOT ENGINE_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(ENGINE_HAVE_CUDA ON)
  elseif(ENGINE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ENGINE_WITH_CUDA=ON but no CUDA compiler (nvcc) was found. Install the CUDA "
                        "toolkit 13 (https://developer.nvidia.com/cuda-downloads) or pass -DENGINE_WITH_CUDA=OFF.")
  else()
    message(STATUS "cnn_engine: nvcc not found; building the CPU device only")
  endif()
endif()

if(NOT ENGINE_HAVE_CUDA)
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  execute_process(COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
                  OUTPUT_VARIABLE _engine_gpu_caps RESULT_VARIABLE _engine_smi_rc ERROR_QUIET)
  if(_engine_smi_rc EQUAL 0 AND _engine_gpu_caps MATCHES "[0-9]\\.[0-9]")
    set(CMAKE_CUDA_ARCHITECTURES native)
  else()
    set(CMAKE_CUDA_ARCHITECTURES ${ENGINE_DEFAULT_CUDA_ARCHITECTURES})
  endif()
endif()
message(STATUS "cnn_engine: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES}")

enable_language(CUDA)
# CMake 3.25 predates nvcc's C++20 support; teach it the flag so CUDA_STANDARD 20 works.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
# CMake 3.25.0/3.25.1's FindCUDAToolkit marks CUDA::nvToolsExt deprecated without checking that it exists, and
# CUDA 13 has no libnvToolsExt (NVTX 3 is header-only): configure fails with Debian 12's cmake as shipped. It
# does so only for projects that require CMake >= 3.25, so the call sees a lower minimum.
if(CMAKE_VERSION VERSION_LESS 3.26)
  set(_engine_minimum_version ${CMAKE_MINIMUM_REQUIRED_VERSION})
  set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
  find_package(CUDAToolkit 12 REQUIRED)
  set(CMAKE_MINIMUM_REQUIRED_VERSION ${_engine_minimum_version})
else()
  find_package(CUDAToolkit 12 REQUIRED)
endif()

# Where pip put a package's files (empty when Python or the package is absent).
function(engine_python_package_dir module out_var)
  find_program(_engine_python NAMES python3 python)
  set(${out_var} "" PARENT_SCOPE)
  if(_engine_python)
    execute_process(COMMAND ${_engine_python} -c "import ${module}; print(list(${module}.__path__)[0])"
                    OUTPUT_VARIABLE _dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
    if(_rc EQUAL 0)
      set(${out_var} "${_dir}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

# engine_find_cuda_library(NAME header soname python_module root_var) -> imported target engine::NAME
function(engine_find_cuda_library name header lib_names python_module root_var pip_package)
  engine_python_package_dir(${python_module} _pip_dir)
  set(_hints ${${root_var}} $ENV{${root_var}} ${CUDAToolkit_LIBRARY_ROOT} ${_pip_dir})
  find_path(${name}_INCLUDE_DIR ${header} HINTS ${_hints} PATH_SUFFIXES include)
  find_library(${name}_LIBRARY NAMES ${lib_names} HINTS ${_hints} PATH_SUFFIXES lib lib64)
  if(NOT ${name}_INCLUDE_DIR OR NOT ${name}_LIBRARY)
    message(FATAL_ERROR "cnn_engine: ${name} not found (header ${header}, library ${lib_names}). Install it with "
                        "the CUDA toolkit, or 'pip install ${pip_package}', or pass -D${root_var}=/path. "
                        "Searched: ${_hints}")
  endif()
  add_library(engine::${name} UNKNOWN IMPORTED GLOBAL)
  set_target_properties(engine::${name} PROPERTIES IMPORTED_LOCATION ${${name}_LIBRARY}
                                                   INTERFACE_INCLUDE_DIRECTORIES ${${name}_INCLUDE_DIR})
  message(STATUS "cnn_engine: ${name} ${${name}_LIBRARY}")
endfunction()

engine_find_cuda_library(cudnn cudnn.h "cudnn;libcudnn.so.9" nvidia.cudnn CUDNN_ROOT nvidia-cudnn-cu13)
engine_find_cuda_library(nccl nccl.h "nccl;libnccl.so.2" nvidia.nccl NCCL_ROOT nvidia-nccl-cu13)
