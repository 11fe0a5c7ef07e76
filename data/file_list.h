#pragma once
// The files of an image dataset and their labels, found without decoding a pixel: a folder laid out as
// torchvision's ImageFolder (root/<class>/<image>.png|jpg|jpeg|bmp, extensions in any case; classes are the
// sub-folders sorted by name, label = index; each class's files sorted by name; hidden entries and files
// with other extensions ignored), or a CSV file list of `path,label` lines (paths relative to the CSV's
// folder; label a class name; an optional header line `path,label`; classes sorted by name, numerically
// when every name is an integer).
//
// Every listed file's header is read (the first 64 KiB; the whole file where a JPEG's header lies further),
// so a file that is not an image, is empty, truncated at the header or unreadable is refused here, naming
// it, before any training starts.
//
// `classes`: a test split matched to its training split by name. Given, the result's class_names are
// exactly `classes` and each folder's (or line's) class takes the label of the same name there; a class not
// among them is refused, naming it; a split lacking some of them is fine.

#include <cstdint>
#include <string>
#include <vector>

namespace engine::data {

struct FileList {
  std::vector<std::string> files;  // paths as they open
  std::vector<std::int32_t> labels;
  std::vector<std::string> class_names;
};

// Throws engine::Error naming the path: a missing root, a root that is not a folder, no class folders, an
// empty class folder, a symlink loop, an unreadable file, a file that is not an image.
FileList index_image_folder(const std::string& root, const std::vector<std::string>* classes = nullptr);

// Throws engine::Error naming the file and line for a malformed line, and as index_image_folder for the
// files it lists.
FileList read_file_list(const std::string& csv, const std::vector<std::string>* classes = nullptr);

// A folder (index_image_folder) or, for a path ending in .csv, a file list.
FileList list_images(const std::string& path, const std::vector<std::string>* classes = nullptr);

}  // namespace engine::data
