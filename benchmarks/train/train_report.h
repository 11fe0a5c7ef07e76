#pragma once
// train_bench's output: one case as lines on stdout, and as a JSON object (--json).

#include <string>

#include <nlohmann/json.hpp>

#include "benchmarks/train/train_case.h"

namespace engine::bench::train {

void print_result(const Result& r, const Config& c);
nlohmann::json to_json(const Result& r, const Config& c, const std::string& device, const std::string& data);

}  // namespace engine::bench::train
