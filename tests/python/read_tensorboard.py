"""Reads a TensorBoard run folder with TensorBoard's own reader (its EventAccumulator, which is what
`tensorboard --logdir` serves from, including the purge of steps a resumed run logs again) and prints what it
holds as one JSON object: {"scalars": {tag: [[step, value], ...]}, "images": {tag: [[step, width, height,
png_bytes]]}, "histograms": {tag: [[step, num, min, max, sum, bucket_count]]}}."""

import json
import sys

from tensorboard.backend.event_processing import event_accumulator


def main(folder):
    acc = event_accumulator.EventAccumulator(folder, size_guidance={"scalars": 0, "images": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    out = {"scalars": {}, "images": {}, "histograms": {}}
    for tag in tags["scalars"]:
        out["scalars"][tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
    for tag in tags["images"]:
        out["images"][tag] = [[e.step, e.width, e.height, len(e.encoded_image_string)] for e in acc.Images(tag)]
    for tag in tags["histograms"]:
        out["histograms"][tag] = [
            [e.step, e.histogram_value.num, e.histogram_value.min, e.histogram_value.max,
             e.histogram_value.sum, len(e.histogram_value.bucket)]
            for e in acc.Histograms(tag)
        ]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
