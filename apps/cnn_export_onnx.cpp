// cnn_export_onnx: writes the model of a cnn_train checkpoint as an ONNX file, for onnxruntime, TensorRT,
// Netron or PyTorch (layers/onnx/onnx_model.h).
//
//   cnn_export_onnx --checkpoint ckpt.safetensors --output model.onnx
//
// The file is the model in inference form (BatchNorm with its running statistics, no Dropout) at opset 17,
// checked by the ONNX checker; its input "input" is [N, C, H, W] images normalized as in training (the
// mean and std are printed), its output "logits" [N, classes]. cnn_train --model model.onnx trains it again.
// Exit codes: 0 ok; 2 bad usage or input (a missing or corrupt checkpoint, named); 1 another failure.

#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/cli/cli_errors.h"
#include "apps/cli/output_path.h"
#include "apps/predict.h"
#include "layers/onnx/onnx_model.h"

int main(int argc, char** argv) {
  std::string checkpoint, output;
  CLI::App app{"cnn_export_onnx: write a cnn_train checkpoint's model as ONNX"};
  app.add_option("--checkpoint", checkpoint, "a checkpoint written by cnn_train")->required();
  app.add_option("--output", output, "the ONNX file to write (FILE.onnx)")
      ->required()
      ->check(CLI::Validator(engine::apps::output_file_problem, "FILE", "WRITABLE"));
  engine::apps::add_verbose_flag(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return engine::apps::report_parse_error(app, e, "cnn_export_onnx");
  }
  try {
    const engine::apps::Predictor predictor(checkpoint, "");
    engine::layers::onnx::export_model(predictor.model(), output);
    fmt::print(
        "cnn_export_onnx: wrote {} (opset 17, inference form); input 'input' {} normalized with mean "
        "[{}] and std [{}], output 'logits'\n",
        output, engine::shape_str(predictor.model().sample_shape()), fmt::join(predictor.mean(), ", "),
        fmt::join(predictor.std(), ", "));
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnn_export_onnx: {}\n", engine::apps::failure_text(e));
    return 2;
  }
  return 0;
}
