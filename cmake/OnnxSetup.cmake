# ONNX support (layers/onnx/): Debian's libonnx-dev (onnx.proto's C++ classes, the checker) and protobuf.
# AUTO builds it where they are found and says so either way; without it, a .onnx model is refused with a
# message that names the missing package, and the tests that need it skip.
set(ENGINE_HAVE_ONNX OFF)
if(NOT ENGINE_WITH_ONNX STREQUAL "OFF")
  find_package(ONNX QUIET)
  find_package(Protobuf QUIET)
  if(TARGET onnx AND TARGET onnx_proto AND Protobuf_FOUND)
    set(ENGINE_HAVE_ONNX ON)
  elseif(ENGINE_WITH_ONNX STREQUAL "ON")
    message(FATAL_ERROR "ENGINE_WITH_ONNX=ON but libonnx-dev / libprotobuf-dev were not found "
                        "(scripts/install-deps.sh installs them)")
  endif()
endif()
if(ENGINE_HAVE_ONNX)
  message(STATUS "cnn_engine: ONNX import/export ON (libonnx ${ONNX_VERSION}, protobuf ${Protobuf_VERSION})")
else()
  message(STATUS "cnn_engine: ONNX import/export OFF (no libonnx-dev/libprotobuf-dev found, or "
                 "ENGINE_WITH_ONNX=OFF): .onnx models are refused, the ONNX tests skip")
endif()
