#pragma once
// The folder a dataset is looked for in when no folder is given (neither --data-dir nor its variable,
// $CIFAR10_DIR or $MNIST_DIR): the user's cache, which no source tree holds. (The old ./data/<name> landed
// inside the repository's data/ sources when run from its root, and --download filled it there.)

#include <string>
#include <string_view>

namespace engine::data {

// $XDG_CACHE_HOME/cnn_engine/<name>, else $HOME/.cache/cnn_engine/<name> (the XDG base directory rule), else,
// with no home at all, <temp>/cnn_engine/<name>.
std::string user_data_dir(std::string_view name);

}  // namespace engine::data
