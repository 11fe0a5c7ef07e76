// cnn_train: trains a model of the zoo on a dataset, on one GPU or on the CPU, with SGD and a learning-rate
// schedule; evaluates on the test set every epoch; writes safetensors checkpoints PyTorch can load.
//
//   cnn_train --dataset cifar10|mnist|fashion-mnist|folder:PATH [--model vgg6|cnn3|mnist_cnn|resnet18]
//             [--epochs N] [--batch-size B] [--lr LR] [--schedule constant|step|cosine] ... (--help lists
//             all)
//
// Exit codes: 0 done; 2 bad usage or bad input (the message names the flag or the file); 1 a failure while
// running (a NaN/Inf loss names the epoch and step).

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/train_config.h"
#include "apps/trainer.h"
#include "core/error.h"

int main(int argc, char** argv) {
  engine::apps::TrainConfig config;
  CLI::App app{"cnn_train: train a CNN of the model zoo (GPU when present, else CPU)"};
  engine::apps::add_train_flags(app, config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  std::unique_ptr<engine::apps::Trainer> trainer;
  try {  // everything before the first step is checking input: flags, data files, checkpoints
    engine::apps::finish_train_config(app, config);
    trainer = std::make_unique<engine::apps::Trainer>(config);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnn_train: {}\n", e.what());
    return 2;
  }
  try {
    trainer->run();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "cnn_train: {}\n", e.what());
    return 1;
  }
  return 0;
}
