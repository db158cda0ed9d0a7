#pragma once
#include <torch/extension.h>

namespace solution {
inline double twice(double x) { return 2.0 * x; }
}  // namespace solution
