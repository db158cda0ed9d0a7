"""Cold torch.compile cost decomposed on a GPU (issue 28): python3 benchmarks/compile_cost_probe.py MODE PROBLEM... (the compile cache from TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR). One JSON line per problem: its compile seconds (precompile.compile_ahead) and inductor's cache counters; first the import, CUDA and load seconds. Results: benchmarks/results/2026-12-04-h200-compile-cost-probe.log."""
import json, sys, time
t0 = time.perf_counter()
import torch
t_import = time.perf_counter() - t0
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t_cuda = time.perf_counter() - t0 - t_import
from pathlib import Path
from solbench.data.loaders import load_problems
from solbench.data.selection import choose_workloads
from solbench.exec.precompile import compile_ahead
from torch._dynamo.utils import counters
mode = sys.argv[1]
names = sys.argv[2:]
problems = {p.name: p for p in load_problems([Path("src/solbench/dataset/models")]) if p.name in names}
t_load = time.perf_counter() - t0 - t_import - t_cuda
print(json.dumps({"import_s": round(t_import, 2), "cuda_s": round(t_cuda, 2), "load_s": round(t_load, 2)}), flush=True)
for name in names:
    p = problems[name]
    w = choose_workloads(p, "smallest:1")
    payload = {"definition": p.definition.to_json_dict(), "workloads": [x.to_json_dict() for x in w], "root": str(p.root) if p.root else None,
               "kind": p.kind, "profile": p.input_profile, "synthesize": p.synthesize_missing_blobs, "mode": mode, "device": "cuda", "seed": 0,
               "input_profile": "auto"}
    counters.clear()
    torch._dynamo.reset()
    s, err = compile_ahead(payload)
    c = {k: dict(v) for k, v in counters.items() if k in ("inductor", "aot_autograd")}
    hits = {k: v for k, v in c.get("inductor", {}).items() if "cache" in k}
    print(json.dumps({"problem": name, "mode": mode, "s": round(s, 2), "err": err, "cache": hits, "aot": c.get("aot_autograd", {})}), flush=True)
