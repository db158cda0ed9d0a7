// silu_and_mul_llama3_8b in CUDA C++: output = silu(gate) * up, where gate_up = [gate | up].
//
// A grid-stride loop over the output's elements; the math runs in fp32 and is rounded to bf16
// once. solbench builds it with torch.utils.cpp_extension and binds run() itself (no
// PYBIND11_MODULE needed); it needs a GPU and a CUDA build of PyTorch.

#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

__global__ void silu_and_mul_kernel(const __nv_bfloat16* gate_up, __nv_bfloat16* output, int64_t rows, int64_t d) {
  const int64_t total = rows * d;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / d;
    const int64_t column = i - row * d;
    const float gate = __bfloat162float(gate_up[row * 2 * d + column]);
    const float up = __bfloat162float(gate_up[row * 2 * d + d + column]);
    output[i] = __float2bfloat16(gate / (1.0f + __expf(-gate)) * up);
  }
}

void run(torch::Tensor gate_up, torch::Tensor output) {
  TORCH_CHECK(gate_up.is_cuda() && gate_up.is_contiguous() && gate_up.scalar_type() == torch::kBFloat16,
              "gate_up must be a contiguous bf16 CUDA tensor");
  TORCH_CHECK(output.is_cuda() && output.is_contiguous() && output.scalar_type() == torch::kBFloat16,
              "output must be a contiguous bf16 CUDA tensor");
  const int64_t rows = gate_up.size(0);
  const int64_t d = gate_up.size(1) / 2;
  const int64_t total = rows * d;
  if (total == 0) return;
  const int threads = 256;
  const int blocks = (int)std::min<int64_t>((total + threads - 1) / threads, 4096);
  silu_and_mul_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(gate_up.data_ptr()), reinterpret_cast<__nv_bfloat16*>(output.data_ptr()), rows, d);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
