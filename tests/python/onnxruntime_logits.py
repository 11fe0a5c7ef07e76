"""Runs an ONNX model with onnxruntime (CPU) on a float32 input read from a raw file, in chunks of 500
samples (10,000 CIFAR images at once would hold gigabytes of activations):

  python3 onnxruntime_logits.py MODEL.onnx INPUT.f32 N C H W            prints the logits as JSON
  python3 onnxruntime_logits.py MODEL.onnx INPUT.f32 N C H W OUT.f32    writes them as raw float32 [N, classes]
"""

import json
import sys

import numpy as np
import onnxruntime as ort

CHUNK = 500


def main(model, data, n, c, h, w, out=None):
    x = np.fromfile(data, dtype=np.float32).reshape(int(n), int(c), int(h), int(w))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    logits = np.concatenate([session.run(None, {name: x[i:i + CHUNK]})[0] for i in range(0, len(x), CHUNK)])
    if out is None:
        print(json.dumps(logits.astype(np.float64).tolist()))
    else:
        logits.astype(np.float32).tofile(out)
        print(f"onnxruntime_logits: wrote {logits.shape[0]} x {logits.shape[1]}")


if __name__ == "__main__":
    main(*sys.argv[1:])
