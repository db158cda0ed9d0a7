// A C++ (CPU) solution without PYBIND11_MODULE: the builder generates the binding.
#include "common.h"

/* torch::Tensor scaled_add(int not_this_one); -- a comment, not a declaration */
void scaled_add(torch::Tensor a,
                torch::Tensor b,
                double alpha,
                torch::Tensor out) {
  // destination-passing style: writes into out
  out.copy_(a + b * solution::twice(alpha) / 2.0);
}
