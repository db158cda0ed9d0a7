"""How long the static guards take on solutions of realistic size.

Generates N source files (default 100; half Python/Triton of 100-400 lines, half CUDA C++ of
200-600 lines, built by combining kernel templates, some Python files carrying a load_inline CUDA
source and some C++ files PTX inline assembly), groups them into solutions of one to four files, and
times `analyze_solution` over all of them. Prints the median of R runs (default 5) and fails (exit
code 1) when it is over the budget (default 2 s).

    python benchmarks/static_analysis_speed.py [--files 100] [--runs 5] [--budget 2.0]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

from solbench.bench.guards import analyze_solution
from solbench.data import Solution

PY_HEADER = '''"""Generated solution {index}: Triton kernels and torch glue."""
import functools
import math
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

BLOCK_DEFAULT = {block}
EPS = 1e-{eps}
'''

PY_BLOCKS = [
    '''

@triton.jit
def {name}_kernel(x_ptr, y_ptr, w_ptr, n_rows, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(y_ptr + row * stride + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def {name}(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    {name}_kernel[(n_rows,)](x, out, w, n_rows, n_cols, x.stride(0), EPS, BLOCK=block, num_warps=8)
''',
    '''

@triton.autotune(configs=[triton.Config({{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}}, num_stages=3, num_warps=8),
                          triton.Config({{"BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 32}}, num_stages=4, num_warps=4)],
                 key=["M", "N", "K"])
@triton.jit
def {name}_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    c = acc.to(tl.bfloat16)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn, c, mask=mask)


@functools.lru_cache(maxsize=64)
def {name}_grid(M: int, N: int) -> Tuple[int, ...]:
    return (triton.cdiv(M, 64) * triton.cdiv(N, 128),)


def {name}(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    M, K = a.shape
    _, N = b.shape
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    {name}_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
''',
    '''

class {cname}(torch.nn.Module):
    def __init__(self, hidden: int = {hidden}):
        super().__init__()
        self.hidden = hidden
        self.cache = {{}}

    def forward(self, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype)
        if key not in self.cache:
            self.cache[key] = math.sqrt(self.hidden)
        h = F.linear(x, w1)
        gate, up = h.chunk(2, dim=-1)
        h = F.silu(gate) * up
        return F.linear(h, w2) / self.cache[key]


_{name}_module: Optional[{cname}] = None


def {name}(x, w1, w2):
    global _{name}_module
    if _{name}_module is None:
        _{name}_module = {cname}(x.shape[-1])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = _{name}_module(x, w1, w2)
    torch.cuda.current_stream().wait_stream(side)
    return y
''',
]

PY_INLINE = '''

CUDA_SRC_{index} = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void scale_{index}(const float* __restrict__ x, float* __restrict__ y, float s, int64_t n) {{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}}

void launch_scale_{index}(torch::Tensor x, torch::Tensor y, double s) {{
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "CUDA tensors expected");
    int64_t n = x.numel();
    scale_{index}<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
}}
"""

_ext_{index} = None


def inline_scale(x, y, s):
    global _ext_{index}
    if _ext_{index} is None:
        from torch.utils.cpp_extension import load_inline
        _ext_{index} = load_inline(name="scale_{index}", cpp_sources="void launch_scale_{index}(torch::Tensor x, torch::Tensor y, double s);",
                                   cuda_sources=CUDA_SRC_{index}, functions=["launch_scale_{index}"])
    _ext_{index}.launch_scale_{index}(x, y, s)
'''

CPP_HEADER = '''// Generated solution {index}: CUDA C++ kernels with their own binding.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <vector>

#define CUDA_CHECK(expr) do {{ cudaError_t err_ = (expr); TORCH_CHECK(err_ == cudaSuccess, "CUDA error: ", cudaGetErrorString(err_)); }} while (0)

namespace sol{index} {{
constexpr int kWarp = 32;
constexpr int kBlock = {block};
'''

CPP_BLOCKS = [
    '''
template <int BLOCK>
__global__ void {name}_kernel(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ out,
                             int rows, int cols, float eps) {{
  __shared__ float partial[BLOCK / kWarp];
  const int row = blockIdx.x;
  float acc = 0.f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) {{
    const float v = __half2float(x[row * cols + c]);
    acc += v * v;
  }}
  #pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, offset);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {{
    float total = 0.f;
    for (int i = 0; i < BLOCK / kWarp; ++i) total += partial[i];
    partial[0] = rsqrtf(total / cols + eps);
  }}
  __syncthreads();
  const float scale = partial[0];
  for (int c = threadIdx.x; c < cols; c += BLOCK) {{
    const float v = __half2float(x[row * cols + c]);
    out[row * cols + c] = __float2half(v * scale * __half2float(w[c]));
  }}
}}

torch::Tensor {name}(torch::Tensor x, torch::Tensor w, double eps) {{
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "{name}: CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == at::kHalf, "{name}: half expected");
  auto out = torch::empty_like(x);
  const int rows = x.size(0), cols = x.size(1);
  auto stream = at::cuda::getCurrentCUDAStream();
  {name}_kernel<kBlock><<<rows, kBlock, 0, stream>>>(
      reinterpret_cast<const __half*>(x.data_ptr<at::Half>()), reinterpret_cast<const __half*>(w.data_ptr<at::Half>()),
      reinterpret_cast<__half*>(out.data_ptr<at::Half>()), rows, cols, static_cast<float>(eps));
  CUDA_CHECK(cudaGetLastError());
  return out;
}}
''',
    '''
__device__ __forceinline__ void {name}_ldmatrix(uint32_t* r, const void* smem) {{
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%0, %1, %2, %3}}, [%4];\\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}}

__device__ __forceinline__ void {name}_mma(float* d, const uint32_t* a, const uint32_t* b) {{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};\\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}}

__device__ __forceinline__ void {name}_cp_async(void* smem, const void* gmem) {{
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n" :: "r"(addr), "l"(gmem));
}}

__global__ void {name}_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {{
  __shared__ __align__(128) __nv_bfloat16 sA[128 * 32];
  __shared__ __align__(128) __nv_bfloat16 sB[32 * 128];
  float acc[4] = {{0.f, 0.f, 0.f, 0.f}};
  uint32_t a_frag[4];
  uint32_t b_frag[2] = {{0u, 0u}};
  for (int k0 = 0; k0 < K; k0 += 32) {{
    {name}_cp_async(sA + threadIdx.x * 8, A + (blockIdx.y * 128) * K + k0 + threadIdx.x * 8);
    {name}_cp_async(sB + threadIdx.x * 8, B + k0 * N + blockIdx.x * 128 + threadIdx.x * 8);
    asm volatile("cp.async.wait_all;\\n" ::);
    __syncthreads();
    {name}_ldmatrix(a_frag, sA + (threadIdx.x % 16) * 32);
    {name}_mma(acc, a_frag, b_frag);
    __syncthreads();
  }}
  const int row = blockIdx.y * 128 + threadIdx.x / 4;
  const int col = blockIdx.x * 128 + (threadIdx.x % 4) * 2;
  if (row < M && col + 1 < N) {{
    C[row * N + col] = acc[0];
    C[row * N + col + 1] = acc[1];
  }}
}}

void {name}(torch::Tensor a, torch::Tensor b, torch::Tensor c) {{
  const int M = a.size(0), K = a.size(1), N = b.size(1);
  dim3 grid((N + 127) / 128, (M + 127) / 128);
  {name}_kernel<<<grid, 128, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(a.data_ptr()), reinterpret_cast<const __nv_bfloat16*>(b.data_ptr()),
      c.data_ptr<float>(), M, N, K);
  CUDA_CHECK(cudaGetLastError());
}}
''',
    '''
__global__ void {name}_kernel(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out, int64_t n) {{
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {{
    const float g = gate[i];
    out[i] = g / (1.0f + __expf(-g)) * up[i];
  }}
}}

static std::vector<int64_t> {name}_shape_log;

void {name}(torch::Tensor gate, torch::Tensor up, torch::Tensor out) {{
  const int64_t n = out.numel();
  if ({name}_shape_log.size() < 16) {name}_shape_log.push_back(n);
  cudaStream_t side;
  CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t ready;
  CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(ready, at::cuda::getCurrentCUDAStream()));
  CUDA_CHECK(cudaStreamWaitEvent(side, ready, 0));
  {name}_kernel<<<(n + kBlock - 1) / kBlock, kBlock, 0, side>>>(gate.data_ptr<float>(), up.data_ptr<float>(),
                                                             out.data_ptr<float>(), n);
  CUDA_CHECK(cudaStreamSynchronize(side));
  CUDA_CHECK(cudaEventDestroy(ready));
  CUDA_CHECK(cudaStreamDestroy(side));
}}
''',
]


def python_file(rng: random.Random, index: int) -> str:
    target = rng.randint(100, 340)  # blocks are at most ~50 lines: files land in 100-400 lines
    text = PY_HEADER.format(index=index, block=rng.choice([64, 128, 256]), eps=rng.randint(5, 6))
    if rng.random() < 0.4:
        text += PY_INLINE.format(index=index)
    part = 0
    while text.count("\n") < target:
        block = rng.choice(PY_BLOCKS)
        name = f"op{index}_{part}"
        text += block.format(name=name, cname=f"Op{index}x{part}", hidden=rng.choice([1024, 4096, 8192]))
        part += 1
    text += "\n\ndef run(x, w, out):\n    op{0}_0(x, w, out)\n".format(index) if "def op%d_0(" % index in text else "\n\ndef run(x):\n    return x\n"
    return text


def cpp_file(rng: random.Random, index: int) -> str:
    target = rng.randint(200, 530)  # blocks are at most ~60 lines: files land in 200-600 lines
    text = CPP_HEADER.format(index=index, block=rng.choice([128, 256, 512]))
    names = []
    part = 0
    while text.count("\n") < target:
        name = f"op{index}_{part}"
        text += rng.choice(CPP_BLOCKS).format(name=name)
        names.append(name)
        part += 1
    text += "}}  // namespace sol{0}\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n".format(index).replace("}}", "}")
    text = text.replace("{{", "{")
    for name in names:
        text += f'  m.def("{name}", &sol{index}::{name}, "{name}");\n'
    text += "}\n"
    return text


def make_solutions(files: int, seed: int = 0) -> tuple[list[Solution], int, int]:
    rng = random.Random(seed)
    solutions: list[Solution] = []
    made = lines = 0
    index = 0
    while made < files:
        count = min(rng.randint(1, 4), files - made)
        python = len(solutions) % 2 == 0  # alternate: about half the files of each family
        sources = []
        for _ in range(count):
            index += 1
            if python:
                content, path = python_file(rng, index), f"mod{index}.py"
            else:
                content, path = cpp_file(rng, index), f"kernel{index}.cu"
            lines += content.count("\n")
            sources.append({"path": path, "content": content})
        entry = sources[0]["path"] + ("::run" if python else "::" + "op%d_0" % (index - count + 1))
        solutions.append(Solution.model_validate({
            "name": f"generated_{len(solutions)}",
            "definition": "static_analysis_speed",
            "spec": {"languages": ["triton"] if python else ["cuda_cpp"], "entry_point": entry},
            "sources": sources,
        }))
        made += count
    return solutions, made, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=float, default=2.0, help="seconds allowed for the median run")
    args = parser.parse_args()

    solutions, files, lines = make_solutions(args.files)
    python_files = sum(1 for s in solutions for src in s.sources if src.path.endswith(".py"))
    times, cpu_times = [], []
    rejects = warns = 0
    for _ in range(args.runs):
        start, cpu_start = time.perf_counter(), time.process_time()
        findings = [f for solution in solutions for f in analyze_solution(solution)]
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
        rejects = sum(1 for f in findings if f.severity == "reject")
        warns = len(findings) - rejects
    median = statistics.median(times)
    print(f"{files} files ({python_files} Python/Triton, {files - python_files} CUDA C++), {lines} lines, "
          f"{len(solutions)} solutions")
    print(f"analyze_solution over all of them: median {median:.3f} s of {args.runs} runs "
          f"(min {min(times):.3f} s, max {max(times):.3f} s); {lines / median:,.0f} lines/s")
    print(f"CPU time of this process: median {statistics.median(cpu_times):.3f} s (wall minus CPU is time lost to other load; "
          f"load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())})")
    print(f"findings: {rejects} reject, {warns} warn (the generated sources are legitimate: expect 0 reject)")
    if rejects:
        print("FAIL: legitimate generated sources got reject findings")
        return 1
    if median > args.budget:
        print(f"FAIL: median {median:.3f} s is over the budget of {args.budget:.1f} s")
        return 1
    print(f"OK: under the budget of {args.budget:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
