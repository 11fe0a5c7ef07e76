#pragma once
// An output file a program will write (cnn_train's --metrics, --plot, --trace, --confusion, --misclassified;
// cnn_export_onnx's --output), checked when the flags are read, before any data is: a missing or read-only
// folder is refused with exit status 2 up front, not found after the whole run has trained (issue 44).

#include <string>

namespace engine::apps {

// What keeps `path` from being a file this process can write, or "" when nothing does: it names a folder,
// its folder does not exist or is not a folder, or the folder (or the file, when it exists) is not writable.
std::string output_file_problem(const std::string& path);

// Throws engine::Error "FLAG 'PATH': <problem>" when output_file_problem(path) says one; "" passes.
void check_output_file(const char* flag, const std::string& path);

}  // namespace engine::apps
