"""Runs an ONNX model with onnxruntime (CPU) on a float32 input read from a raw file and prints the logits as
JSON: python3 onnxruntime_logits.py MODEL.onnx INPUT.f32 N C H W"""

import json
import sys

import numpy as np
import onnxruntime as ort


def main(model, data, n, c, h, w):
    x = np.fromfile(data, dtype=np.float32).reshape(int(n), int(c), int(h), int(w))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {session.get_inputs()[0].name: x})
    print(json.dumps(logits.astype(np.float64).tolist()))


if __name__ == "__main__":
    main(*sys.argv[1:])
