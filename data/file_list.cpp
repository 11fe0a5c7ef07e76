#include "data/file_list.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "data/file_io.h"
#include "data/image_codec.h"

namespace engine::data {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kHeaderBytes = 64 * 1024;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

bool is_hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

// Sorted entries of `dir` that pass `keep`.
template <typename Keep>
std::vector<fs::path> sorted_entries(const fs::path& dir, Keep keep) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  ENGINE_CHECK(!ec, "{}: cannot list folder: {}", dir.string(), ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    ENGINE_CHECK(!ec, "{}: cannot list folder: {}", dir.string(), ec.message());
    if (!is_hidden(it->path()) && keep(*it)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Reads the start of `path` and checks it is an image whose header parses.
void check_header(const std::string& path) {
  const std::vector<std::uint8_t> head = read_file(path, kHeaderBytes);
  try {
    (void)image_info(head, path);
  } catch (const Error&) {
    if (head.size() < kHeaderBytes) throw;    // the whole file was read: the header is bad
    (void)image_info(read_file(path), path);  // a JPEG whose frame header lies past the first 64 KiB
  }
}

std::int32_t label_of(const std::string& name, const std::vector<std::string>& classes,
                      const std::string& where) {
  const auto it = std::find(classes.begin(), classes.end(), name);
  std::string known;
  for (const std::string& c : classes) known += (known.empty() ? "" : ", ") + c;
  ENGINE_CHECK(it != classes.end(),
               "{}: class '{}' is not one of the training split's classes ({}); the test classes must be "
               "training classes, matched by name",
               where, name, known);
  return static_cast<std::int32_t>(it - classes.begin());
}

bool all_integers(const std::vector<std::string>& names) {
  return std::all_of(names.begin(), names.end(), [](const std::string& n) {
    return !n.empty() && n.size() < 10 &&
           std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  });
}

}  // namespace

FileList index_image_folder(const std::string& root, const std::vector<std::string>* classes) {
  std::error_code ec;
  ENGINE_CHECK(fs::exists(root, ec), "{}: no such folder", root);
  ENGINE_CHECK(fs::is_directory(root, ec), "{}: is not a folder (expected one sub-folder per class)", root);
  const auto class_dirs = sorted_entries(root, [](const fs::directory_entry& e) {
    std::error_code e2;
    const bool dir = e.is_directory(e2);
    ENGINE_CHECK(!e2 || e2 == std::errc::no_such_file_or_directory, "{}: cannot follow it: {}",
                 e.path().string(), e2.message());
    return dir;
  });
  ENGINE_CHECK(!class_dirs.empty(), "{}: no class sub-folders (expected {}/<class>/<image>.png)", root, root);
  FileList list;
  for (const auto& dir : class_dirs) list.class_names.push_back(dir.filename().string());
  if (classes != nullptr) list.class_names = *classes;
  for (std::size_t k = 0; k < class_dirs.size(); ++k) {
    const auto& dir = class_dirs[k];
    const std::int32_t label = classes != nullptr ? label_of(dir.filename().string(), *classes, dir.string())
                                                  : static_cast<std::int32_t>(k);
    const auto files =
        sorted_entries(dir, [](const fs::directory_entry& e) { return is_image_name(e.path()); });
    ENGINE_CHECK(!files.empty(), "{}: class folder holds no .png, .jpg, .jpeg or .bmp files", dir.string());
    for (const auto& file : files) {
      check_header(file.string());
      list.files.push_back(file.string());
      list.labels.push_back(label);
    }
  }
  return list;
}

FileList read_file_list(const std::string& csv, const std::vector<std::string>* classes) {
  std::ifstream in(csv);
  ENGINE_CHECK(in.good(), "{}: cannot open the file list", csv);
  const fs::path base = fs::path(csv).parent_path();
  std::vector<std::pair<std::string, std::string>> rows;  // path, class name
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line == "path,label")) continue;
    const auto comma = line.rfind(',');
    ENGINE_CHECK(comma != std::string::npos && comma > 0 && comma + 1 < line.size(),
                 "{}:{}: expected 'path,label', got '{}'", csv, number, line);
    const fs::path p(line.substr(0, comma));
    rows.emplace_back((p.is_absolute() ? p : base / p).string(), line.substr(comma + 1));
  }
  ENGINE_CHECK(!rows.empty(), "{}: the file list names no images", csv);
  FileList list;
  if (classes != nullptr) {
    list.class_names = *classes;
  } else {
    std::map<std::string, int> seen;
    for (const auto& r : rows) seen[r.second] = 0;
    for (const auto& [name, unused] : seen) list.class_names.push_back(name);
    if (all_integers(list.class_names)) {
      std::sort(list.class_names.begin(), list.class_names.end(),
                [](const std::string& a, const std::string& b) { return std::stoi(a) < std::stoi(b); });
    }
  }
  for (const auto& [path, name] : rows) {
    check_header(path);
    list.files.push_back(path);
    list.labels.push_back(label_of(name, list.class_names, csv));
  }
  return list;
}

FileList list_images(const std::string& path, const std::vector<std::string>* classes) {
  return path.ends_with(".csv") ? read_file_list(path, classes) : index_image_folder(path, classes);
}

}  // namespace engine::data
