#pragma once
// --trace's picture: the first traced step's timeline as a PNG drawn by gnuplot (apps/train/gnuplot.h), for
// those who will not open the JSON in a trace viewer. One row per nesting depth of the compute track (the
// step, the model, its blocks, their layers), a row for the wait for data and one for the gradient buckets'
// all-reduces (several ranks), each labelled with its bucket; each span a bar coloured by kind (forward,
// backward, loss, optimizer, data, all-reduce), so the all-reduces are seen beside the backward they overlap.

#include <string>
#include <vector>

#include "core/trace.h"

namespace engine::apps {

// Throws engine::Error naming the file when gnuplot is missing or fails, or when there is no step span.
void write_trace_plot(const std::vector<trace::Span>& spans, const std::string& png_path);

}  // namespace engine::apps
