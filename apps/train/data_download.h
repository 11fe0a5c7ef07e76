#pragma once
// cnn_train --download: fetches cifar10 or mnist into the data folder (--data-dir, else the reader's
// default: $CIFAR10_DIR or ~/.cache/cnn_engine/cifar10, $MNIST_DIR or ~/.cache/cnn_engine/mnist, as
// data/data_home.h says) when it is missing there, before the
// Trainer reads it (data/download.h does the fetching: curl, md5s, ENGINE_DATA_MIRROR).
//
// Distributed, as the DDP issue asks: local rank 0 of each node downloads (a node's ranks share its disk)
// while the other ranks wait at the group's barrier, which every rank reaches once the download is done; a
// waiting rank gives up after --timeout. A single process simply downloads.

#include "apps/train/train_config.h"
#include "dist/bootstrap.h"
#include "dist/process_group.h"

namespace engine::apps {

// The folder the dataset is read from: --data-dir, else the reader's default.
std::string train_data_dir(const TrainConfig& config);

// Does nothing without --download. Otherwise local rank 0 downloads the dataset when
// data::dataset_present() says it is missing, printing "cnn_train: downloaded DATASET into DIR"; then every
// rank waits at `pg`'s barrier (when there is a group). Throws engine::Error for a failed download (exit 2).
void download_train_data(const TrainConfig& config, const dist::DistEnv& env, dist::ProcessGroup* pg);

}  // namespace engine::apps
