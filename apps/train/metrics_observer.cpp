// --metrics FILE (apps/train/observers.h): one JSON object per epoch (apps/train/epoch_log.h), flushed at
// once; a resumed run appends.

#include <fstream>
#include <string>

#include "apps/train/observers.h"
#include "core/error.h"

namespace engine::apps {

namespace {

class MetricsObserver final : public RunObserver {
 public:
  explicit MetricsObserver(std::string path) : path_(std::move(path)) {}

  void run_start(const RunStart& e) override {
    metrics_.open(path_, e.resumed ? std::ios::app : std::ios::trunc);
    ENGINE_CHECK(metrics_.good(), "--metrics '{}': cannot write the file", path_);
  }

  void epoch_end(const EpochEnd& e) override {
    metrics_ << format_metrics_json(e.metrics) << '\n';
    metrics_.flush();
  }

 private:
  std::string path_;
  std::ofstream metrics_;
};

}  // namespace

std::unique_ptr<RunObserver> make_metrics_observer(const std::string& path) {
  return std::make_unique<MetricsObserver>(path);
}

}  // namespace engine::apps
