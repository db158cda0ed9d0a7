import json, os, sys, torch
from torch._subclasses.fake_tensor import FakeTensorMode
sys.path.insert(0, os.path.dirname(__file__))
from verify import resolve_axes, DTYPES
root = sys.argv[1]
for name in sorted(n for n in os.listdir(root) if not n.startswith(".")):
    d = json.load(open(f"{root}/{name}/definition.json"))
    ns = {}; exec(d["reference"], ns); run = ns["run"]
    wls = [json.loads(l) for l in open(f"{root}/{name}/workload.jsonl")]
    w = wls[-1]
    env = resolve_axes(d, w["axes"])
    res = []
    for mode in ("fake", "meta"):
        try:
            ctx = FakeTensorMode() if mode == "fake" else torch.device("meta")
            with ctx:
                ins = []
                for n, s in d["inputs"].items():
                    if s["shape"] is None:
                        ins.append(w["inputs"][n]["value"]); continue
                    shape = [env[x] if isinstance(x, str) else x for x in s["shape"]]
                    ins.append(torch.empty(shape, dtype=DTYPES[s["dtype"]]))
                out = run(*ins)
                outs = out if isinstance(out, tuple) else (out,)
                ok = all(tuple(o.shape) == tuple(env[x] if isinstance(x, str) else x for x in s["shape"]) and o.dtype == DTYPES[s["dtype"]]
                         for o, s in zip(outs, d["outputs"].values()))
            res.append(f"{mode}:{'ok' if ok else 'MISMATCH'}")
        except Exception as e:
            res.append(f"{mode}:ERR {type(e).__name__}: {str(e)[:150]}")
    print(f"{name:34}", *res)
