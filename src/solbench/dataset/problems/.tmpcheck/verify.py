"""Throwaway checker for solbench's bundled problems (independent of solbench's own loader).

usage: python3 verify.py PROBLEMS_DIR [--device cpu|cuda] [--only NAME,...] [--max-workloads N]
"""
import argparse
import ast
import inspect
import json
import math
import os
import sys
import time
import uuid as uuidlib

import torch
import torch.nn.functional as F

DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
DEF_KEYS = ["name", "op_type", "description", "hf_id", "axes", "constraints", "inputs",
            "outputs", "reference"]
TOL_KEYS = ["max_atol", "max_rtol", "required_matched_ratio", "max_error_cap",
            "allow_negative_inf"]


def safe_eval(expr, env):
    tree = ast.parse(str(expr), mode="eval")

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.Name):
            return env[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b}
            return ops[type(n.op)]()
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max"):
            return {"min": min, "max": max}[n.func.id](*[ev(x) for x in n.args])
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            a, b = ev(n.left), ev(n.comparators[0])
            ops = {ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: a < b, ast.LtE: a <= b,
                   ast.Gt: a > b, ast.GtE: a >= b}
            return ops[type(n.ops[0])]
        raise ValueError(f"unsupported expression node {ast.dump(n)} in {expr!r}")
    return ev(tree)


def resolve_axes(defn, wl_axes):
    env = {}
    for name, ax in defn["axes"].items():
        if ax["type"] == "const":
            env[name] = ax["value"]
        elif ax["type"] == "var":
            env[name] = wl_axes[name]
    for _ in range(len(defn["axes"])):
        for name, ax in defn["axes"].items():
            if ax["type"] == "expr" and name not in env:
                try:
                    env[name] = safe_eval(ax["expression"], env)
                except KeyError:
                    pass
    assert all(n in env for n in defn["axes"]), "unresolved axes"
    return env


def gen_input(spec, env, device, gen):
    dtype = DTYPES[spec["dtype"]]
    shape = [env[s] if isinstance(s, str) else s for s in spec["shape"]]
    dist = spec.get("distribution")
    if dtype.is_floating_point:
        if dist is None or dist["kind"] == "normal":
            mean = 0.0 if dist is None else float(dist["mean"])
            std = 1.0 if dist is None else float(dist["std"])
            x = torch.randn(shape, generator=gen, dtype=torch.float32, device=device) * std + mean
        elif dist["kind"] == "uniform":
            lo, hi = float(safe_eval(dist["low"], env)), float(safe_eval(dist["high"], env))
            x = torch.rand(shape, generator=gen, dtype=torch.float32, device=device) * (hi - lo) + lo
        else:
            raise ValueError(f"distribution {dist} for float input")
        if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            fm = torch.finfo(dtype).max
            x = x.clamp(-fm, fm)
        return x.to(dtype)
    if dtype == torch.bool:
        assert dist is None
        return torch.randint(0, 2, shape, generator=gen, device=device).bool()
    lo, hi = 0, 128
    if dist is not None:
        assert dist["kind"] == "integers", dist
        lo, hi = int(safe_eval(dist["low"], env)), int(safe_eval(dist["high"], env))
    return torch.randint(lo, hi, shape, generator=gen, device=device, dtype=dtype)


def check_definition(pdir, name, defn):
    errs = []
    keys = list(defn)
    expected = [k for k in DEF_KEYS if k in defn]
    if keys != expected:
        errs.append(f"key order {keys} != {expected}")
    for k in ["name", "op_type", "description", "hf_id", "axes", "inputs", "outputs", "reference"]:
        if k not in defn:
            errs.append(f"missing key {k}")
    if defn.get("name") != name:
        errs.append("name != folder")
    if os.path.exists(os.path.join(pdir, "reference.py")):
        errs.append("reference.py present")
    for an, ax in defn["axes"].items():
        t = ax["type"]
        if t == "const":
            if set(ax) != {"type", "value"} or not isinstance(ax["value"], int):
                errs.append(f"bad const axis {an}")
        elif t == "var":
            if set(ax) != {"type"}:
                errs.append(f"bad var axis {an}")
        elif t == "expr":
            if set(ax) != {"type", "expression"}:
                errs.append(f"bad expr axis {an}")
        else:
            errs.append(f"bad axis type {an}")
    for sect in ("inputs", "outputs"):
        for tn, spec in defn[sect].items():
            if spec["dtype"] not in DTYPES:
                errs.append(f"{sect}.{tn}: dtype {spec['dtype']}")
            if spec["shape"] is not None:
                for s in spec["shape"]:
                    if isinstance(s, str) and s not in defn["axes"]:
                        errs.append(f"{sect}.{tn}: unknown axis {s}")
                    elif not isinstance(s, (str, int)):
                        errs.append(f"{sect}.{tn}: bad dim {s}")
            extra = set(spec) - {"shape", "dtype"} - ({"distribution"} if sect == "inputs" else set())
            if extra:
                errs.append(f"{sect}.{tn}: extra keys {extra}")
            if "distribution" in spec:
                d = spec["distribution"]
                ok = {"normal": {"kind", "mean", "std"}, "uniform": {"kind", "low", "high"},
                      "integers": {"kind", "low", "high"}}.get(d.get("kind"))
                if ok is None or set(d) != ok:
                    errs.append(f"{sect}.{tn}: bad distribution {d}")
    # reference: top-level run with exactly the input names in order, no .cuda()
    ref = defn["reference"]
    mod = ast.parse(ref)
    runs = [n for n in mod.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    if len(runs) != 1:
        errs.append("no single top-level def run")
    else:
        a = runs[0].args
        params = [x.arg for x in a.posonlyargs + a.args]
        if params != list(defn["inputs"]) or a.vararg or a.kwarg or a.kwonlyargs or a.defaults:
            errs.append(f"run params {params} != inputs {list(defn['inputs'])}")
    if ".cuda(" in ref or "'cuda'" in ref or '"cuda"' in ref:
        errs.append("reference mentions cuda")
    if "import torch" not in ref:
        errs.append("reference lacks import torch")
    return errs


def check_workload(defn, w, seen):
    errs = []
    if list(w) != ["uuid", "axes", "inputs", "tolerance"]:
        errs.append(f"workload keys {list(w)}")
    try:
        u = uuidlib.UUID(w["uuid"])
        if u.version != 4 or str(u) != w["uuid"]:
            errs.append("uuid not canonical uuid4")
    except Exception:
        errs.append("bad uuid")
    if w["uuid"] in seen:
        errs.append("duplicate uuid")
    seen.add(w["uuid"])
    var_axes = [n for n, a in defn["axes"].items() if a["type"] == "var"]
    if set(w["axes"]) != set(var_axes):
        errs.append(f"axes {list(w['axes'])} != var axes {var_axes}")
    if any(not isinstance(v, int) or v <= 0 for v in w["axes"].values()):
        errs.append("non-positive or non-int axis value")
    if list(w["inputs"]) != list(defn["inputs"]):
        errs.append(f"inputs {list(w['inputs'])} != {list(defn['inputs'])}")
    for n, spec in w["inputs"].items():
        d = defn["inputs"].get(n)
        if d is None:
            continue
        if d["shape"] is None:
            if spec.get("type") != "scalar" or "value" not in spec:
                errs.append(f"scalar input {n} not given as scalar")
        elif spec != {"type": "random"}:
            errs.append(f"tensor input {n}: {spec}")
    t = w["tolerance"]
    if list(t) != TOL_KEYS:
        errs.append(f"tolerance keys {list(t)}")
    return errs


def cross_check(name, inputs, outs):
    """Independent formulations for some problems (smallest workload only)."""
    def close(a, b, atol, rtol):
        return torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol)
    if name == "rmsnorm_llama3_8b":
        x, w, eps = inputs
        alt = F.rms_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype) * w
        return close(outs[0], alt, 1e-2, 2e-2)
    if name == "fused_add_rmsnorm_llama3_8b":
        x, r, w, eps = inputs
        s = x + r
        alt = F.rms_norm(s.float(), (x.shape[-1],), eps=eps).to(x.dtype) * w
        return close(outs[0], alt, 1e-2, 2e-2) and torch.equal(outs[1], s)
    if name == "layernorm_backward_gpt2_medium":
        x, w, go, eps = inputs
        xa = x.clone().requires_grad_()
        wa = w.clone().requires_grad_()
        ba = torch.zeros_like(w, requires_grad=True)
        F.layer_norm(xa, (x.shape[-1],), wa, ba, eps).backward(go)
        return all(close(o, g, 1e-3, 1e-4) for o, g in zip(outs, (xa.grad, wa.grad, ba.grad)))
    if name == "gqa_decode_llama3_8b":
        q, k, v = inputs
        alt = F.scaled_dot_product_attention(q.float()[:, :, None, :], k.float(), v.float(),
                                             enable_gqa=True)[:, :, 0, :]
        return close(outs[0], alt, 3e-3, 2e-2)
    if name == "rope_llama3_8b":
        q, k, pos = inputs
        d = q.shape[-1]
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, dtype=torch.float64, device=q.device) / d))
        ang = pos.double()[:, None] * inv[None, :]
        rot = torch.polar(torch.ones_like(ang), ang)[:, None, :]

        def ap(x):
            xc = torch.complex(x[..., : d // 2].double(), x[..., d // 2:].double()) * rot
            return torch.cat((xc.real, xc.imag), dim=-1)
        return close(outs[0], ap(q), 2e-2, 2e-2) and close(outs[1], ap(k), 2e-2, 2e-2)
    if name == "softmax_vit_large_attention":
        (s,) = inputs
        e = torch.exp(s.double() - s.double().amax(-1, keepdim=True))
        return close(outs[0], e / e.sum(-1, keepdim=True), 1e-6, 1e-4)
    if name.startswith("gemm_bf16"):
        a, b = inputs
        return close(outs[0], a.double() @ b.double().T, 1e-2, 2e-2)
    if name.startswith("fp8_gemm"):
        a, b, sa, sb = inputs
        return close(outs[0], (a.double() @ b.double().T) * sa.double() * sb.double(), 0.1, 0.05)
    if name == "embedding_llama3_8b":
        ids, w = inputs
        return torch.equal(outs[0], w[ids])
    if name == "moe_topk_router_mixtral_8x7b":
        x, w = inputs
        lg = x.double() @ w.double().T
        order = lg.argsort(dim=-1, descending=True)[:, :2]
        p = torch.softmax(lg, -1).gather(1, order)
        return torch.equal(outs[1], order) and close(outs[0], p / p.sum(-1, keepdim=True), 1e-4, 1e-4)
    if name == "silu_and_mul_llama3_8b":
        (gu,) = inputs
        g, u = gu.float().chunk(2, dim=-1)
        return close(outs[0], g * torch.sigmoid(g) * u, 1e-2, 2e-2)
    if name == "swiglu_mlp_llama3_8b":
        x, g, u, dn = inputs
        h = F.silu(x.double() @ g.double().T) * (x.double() @ u.double().T)
        alt = h @ dn.double().T
        a, b = outs[0].double(), alt
        return ((a - b).abs() <= 0.03 + 0.03 * b.abs()).double().mean().item() >= 0.999
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default="")
    ap.add_argument("--max-workloads", type=int, default=0)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    total_fail = 0
    summary = []
    for name in sorted(os.listdir(args.root)):
        pdir = os.path.join(args.root, name)
        if name.startswith(".") or not os.path.isdir(pdir) or (only and name not in only):
            continue
        fails = []
        defn = json.load(open(os.path.join(pdir, "definition.json")))
        fails += check_definition(pdir, name, defn)
        ns = {}
        exec(compile(defn["reference"], f"<{name}>", "exec"), ns)
        run = ns["run"]
        assert list(inspect.signature(run).parameters) == list(defn["inputs"])
        lines = [l for l in open(os.path.join(pdir, "workload.jsonl")).read().splitlines()]
        if any(not l.strip() for l in lines):
            fails.append("blank line in workload.jsonl")
        wls = [json.loads(l) for l in lines if l.strip()]
        if not 4 <= len(wls) <= 16:
            fails.append(f"{len(wls)} workloads")
        seen = set()
        for w in wls:
            fails += [f"wl {w.get('uuid')}: {e}" for e in check_workload(defn, w, seen)]
        if defn.get("constraints"):
            for w in wls:
                env = resolve_axes(defn, w["axes"])
                for c in defn["constraints"]:
                    if not safe_eval(c, env):
                        fails.append(f"constraint {c} false for {w['axes']}")
        times = []
        todo = wls if not args.max_workloads else wls[: args.max_workloads]
        for i, w in enumerate(todo):
            env = resolve_axes(defn, w["axes"])
            gen = torch.Generator(device=args.device).manual_seed(1234 + i)
            inputs = []
            for iname, spec in defn["inputs"].items():
                wi = w["inputs"][iname]
                if wi["type"] == "scalar":
                    inputs.append(wi["value"])
                else:
                    inputs.append(gen_input(spec, env, args.device, gen))
            t0 = time.perf_counter()
            with torch.no_grad() if name != "layernorm_backward_gpt2_medium" else torch.enable_grad():
                out = run(*inputs)
            if args.device == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            times.append(dt)
            outs = out if isinstance(out, tuple) else (out,)
            if len(outs) != len(defn["outputs"]):
                fails.append(f"{w['axes']}: {len(outs)} outputs, expected {len(defn['outputs'])}")
                continue
            for o, (oname, spec) in zip(outs, defn["outputs"].items()):
                exp_shape = tuple(env[s] if isinstance(s, str) else s for s in spec["shape"])
                if not isinstance(o, torch.Tensor):
                    fails.append(f"{w['axes']}: {oname} not a tensor")
                    continue
                if tuple(o.shape) != exp_shape:
                    fails.append(f"{w['axes']}: {oname} shape {tuple(o.shape)} != {exp_shape}")
                if o.dtype != DTYPES[spec["dtype"]]:
                    fails.append(f"{w['axes']}: {oname} dtype {o.dtype} != {spec['dtype']}")
                if o.device.type != args.device:
                    fails.append(f"{w['axes']}: {oname} on {o.device}")
                if o.dtype.is_floating_point and not torch.isfinite(o.float()).all():
                    fails.append(f"{w['axes']}: {oname} has non-finite values")
            if i == 0:
                cc = cross_check(name, inputs, outs)
                if cc is False:
                    fails.append(f"{w['axes']}: cross-check against independent formula failed")
                elif cc is None:
                    fails.append("no cross-check")
            del inputs, out, outs
        status = "OK" if not fails else "FAIL"
        total_fail += bool(fails)
        line = (f"{status:4} {name:34} {len(wls):2} workloads; ran {len(times)}; "
                f"ref time max {max(times):.2f}s total {sum(times):.2f}s")
        print(line, flush=True)
        for f in fails:
            print("     ", f, flush=True)
    print("ALL OK" if not total_fail else f"{total_fail} problem(s) failed")
    sys.exit(1 if total_fail else 0)


if __name__ == "__main__":
    main()
