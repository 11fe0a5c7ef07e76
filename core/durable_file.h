#pragma once
// A file written so that a reader finds either the old file or the whole new one, never a part of it, even
// across a crash or a full disk: the checkpoints (optim/safetensors.cpp) and the ONNX export
// (layers/onnx/onnx_export.cpp) both write through it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace engine {

struct DurableWriteOptions {
  // Called after each chunk of the temporary file is written, with the bytes written so far: tests use it to
  // kill the process in the middle of a save.
  std::function<void(std::size_t bytes_written)> after_chunk;
};

// Writes `pieces` one after another to PATH.tmp-PID, flushes it (fsync) and closes it, renames it over
// `path`, then flushes the folder so the rename is durable too. On any failure the temporary is removed and
// engine::Error names what is written, the file and the system's reason ("checkpoint: cannot write
// 'F.tmp-42': No space left on device").
void write_file_durably(const std::string& what, const std::string& path,
                        std::span<const std::span<const std::uint8_t>> pieces,
                        const DurableWriteOptions& options = {});

}  // namespace engine
