#pragma once
// Which half of a dataset with an official train/test division to read (CIFAR-10, MNIST, Fashion-MNIST).

#include <string>
#include <string_view>

#include "core/error.h"

namespace engine::data {

enum class Split { Train, Test };

inline const char* split_name(Split split) { return split == Split::Train ? "train" : "test"; }

// "train" or "test"; anything else throws engine::Error naming the text.
inline Split parse_split(std::string_view text) {
  if (text == "train") return Split::Train;
  if (text == "test") return Split::Test;
  ENGINE_FAIL("unknown split '{}': expected 'train' or 'test'", std::string(text));
}

}  // namespace engine::data
