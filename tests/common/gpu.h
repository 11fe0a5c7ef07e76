#pragma once
// GPU tests exist in every CUDA build; where no device is visible they skip, visibly.

#include <gtest/gtest.h>

#include "core/device.h"

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    if (::engine::device_count() == 0) {                                                \
      GTEST_SKIP() << "no CUDA device visible (device_count() == 0): GPU test skipped"; \
    }                                                                                   \
  } while (0)
