# Host warning flags, applied to every target of ours through engine_target_defaults().
set(ENGINE_HOST_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
                         -Wunused -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wformat=2)
if(ENGINE_WERROR)
  list(APPEND ENGINE_HOST_WARNINGS -Werror)
endif()

if(ENGINE_SANITIZE)
  set(ENGINE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${ENGINE_SANITIZER_FLAGS}>")
  add_link_options(${ENGINE_SANITIZER_FLAGS})
endif()

# Warnings go to host code only; nvcc forwards them to the host compiler for .cu files.
function(engine_target_defaults target)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:${ENGINE_HOST_WARNINGS}>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra;$<$<BOOL:${ENGINE_WERROR}>:--Werror=all-warnings>>")
endfunction()
