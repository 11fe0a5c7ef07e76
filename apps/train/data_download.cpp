#include "apps/train/data_download.h"

#include <cstdio>

#include <fmt/format.h>

#include "apps/train/dataset_catalog.h"
#include "data/download.h"

namespace engine::apps {

std::string train_data_dir(const TrainConfig& config) {
  return dataset_root(config.dataset, config.data_dir);
}

void download_train_data(const TrainConfig& config, const dist::DistEnv& env, dist::ProcessGroup* pg) {
  if (!config.download) return;
  const std::string dir = train_data_dir(config);
  if (env.local_rank == 0 && !data::dataset_present(config.dataset, dir)) {
    const std::string who = config.world_size > 1 ? fmt::format(" (rank {})", config.rank) : std::string();
    fmt::print("cnn_train: downloading {} into {}{}\n", config.dataset, dir, who);
    std::fflush(stdout);
    data::download_dataset(config.dataset, dir);
    fmt::print("cnn_train: downloaded {} into {}{}\n", config.dataset, dir, who);
    std::fflush(stdout);
  }
  if (pg != nullptr) pg->barrier();  // the other ranks of the node read the data only once it is there
}

}  // namespace engine::apps
