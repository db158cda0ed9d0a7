"""Static analysis of solution sources: real sources, no mocks.

Each attack case names the rule it must trigger and marks the line with `HERE` (a comment, so the
analysis is not affected); each near miss names a rule that must stay silent. The legitimate
solutions at the end must get no reject finding at all.
"""

from __future__ import annotations

import base64
import textwrap
import time
from typing import Any

import pytest

from solbench.bench.guards import RULES, Finding, analyze_cpp, analyze_python, analyze_solution
from solbench.bench.guards import static as static_module
from solbench.data import Solution

# A small but well-formed ELF header (what a cubin starts with) and a fatbin header.
ELF_IMAGE = b"\x7fELF\x02\x01\x01\x33\x07" + bytes(7) + b"\x02\x00\xbe\x00\x01\x00\x00\x00" + bytes(48) + b"\x00.shstrtab\x00.nv.info\x00"
FATBIN_IMAGE = b"\x50\xed\x55\xba\x01\x00\x10\x00" + bytes(64)
ELF_B64 = base64.b64encode(b"prefix.." + ELF_IMAGE * 3).decode()
ELF_B64_URLSAFE_WRAPPED = "\n".join(textwrap.wrap(base64.urlsafe_b64encode(b"\x00" + ELF_IMAGE * 4).decode(), 40))
ELF_HEX = ELF_IMAGE.hex()
ELF_HEX_0X = ", ".join(f"0x{b:02x}" for b in ELF_IMAGE[:24])
FATBIN_B64 = base64.b64encode(FATBIN_IMAGE).decode()
RANDOM_B64 = base64.b64encode(bytes((i * 131 + 7) % 251 for i in range(3000))).decode()
ELF_XORED = bytes(b ^ 0x5A for b in ELF_IMAGE * 4)
ELF_SHIFTED = bytes((b + 13) & 0xFF for b in b"\x00" * 8 + ELF_IMAGE * 4)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def marked(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if "HERE" in line:
            return number
    raise AssertionError("no HERE marker")


def rules_at(findings: list[Finding]) -> set[tuple[str, int]]:
    return {(f.rule, f.line) for f in findings}


def rejects(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "reject"]


# --- Python attacks: (rule, source with a HERE marker on the line that must be reported) ----------------

PY_ATTACKS: list[tuple[str, str, str]] = [
    # network, also renamed and through __import__/getattr/importlib
    ("net-socket", "PY-NET", "import socket  # HERE\n"),
    ("net-urllib-alias", "PY-NET", "import urllib.request as u  # HERE\n"),
    ("net-http-from", "PY-NET", "from http import client  # HERE\n"),
    ("net-requests", "PY-NET", "import requests as r  # HERE\n"),
    ("net-httpx", "PY-NET", "import httpx  # HERE\n"),
    ("net-aiohttp", "PY-NET", "import aiohttp  # HERE\n"),
    ("net-ftplib", "PY-NET", "from ftplib import FTP  # HERE\n"),
    ("net-smtplib", "PY-NET", "import smtplib  # HERE\n"),
    ("net-ssl", "PY-NET", "import ssl  # HERE\n"),
    ("net-websockets", "PY-NET", "import websockets.sync.client  # HERE\n"),
    ("net-dunder-import-getattr", "PY-NET", "s = getattr(__import__('socket'), 'socket')  # HERE\n"),
    ("net-importlib-folded", "PY-NET", "import importlib\nname = 'sock' + 'et'\nm = importlib.import_module(name)  # HERE\n"),
    ("net-importlib-alias", "PY-NET", "from importlib import import_module as im\nim('urllib.request').urlopen('http://x')  # HERE\n"),
    ("net-asyncio", "PY-NET", "import asyncio\n\nasync def f():\n    await asyncio.open_connection('h', 80)  # HERE\n"),
    ("net-torch-hub", "PY-NET", "import torch\n\ndef run(x):\n    torch.hub.download_url_to_file('http://127.0.0.1:1/a', 'a.bin')  # HERE\n"),
    ("net-torch-distributed", "PY-NET", "import torch.distributed as dist  # HERE\n"),
    # processes
    ("proc-subprocess-alias", "PY-PROC", "import subprocess as sp  # HERE\nsp.run(['nvidia-smi'])\n"),
    ("proc-subprocess-use", "PY-PROC", "import subprocess as sp\n\ndef run(x):\n    sp.Popen(['ls'])  # HERE\n    return x\n"),
    ("proc-os-system", "PY-PROC", "import os\nos.system('nvidia-smi')  # HERE\n"),
    ("proc-os-popen", "PY-PROC", "import os\nos.popen('ls').read()  # HERE\n"),
    ("proc-os-execv", "PY-PROC", "import os\nos.execv('/bin/sh', ['sh'])  # HERE\n"),
    ("proc-os-spawn", "PY-PROC", "import os\nos.spawnlp(os.P_NOWAIT, 'sleep', 'sleep', '10')  # HERE\n"),
    ("proc-os-fork", "PY-PROC", "import os\npid = os.fork()  # HERE\n"),
    ("proc-from-os-system-renamed", "PY-PROC", "from os import system as s  # HERE\n"),
    ("proc-renamed-use", "PY-PROC", "from os import system as s\n\ndef run():\n    s('ls')  # HERE\n"),
    ("proc-posix", "PY-PROC", "import posix\nposix.system('ls')  # HERE\n"),
    ("proc-multiprocessing", "PY-PROC", "from multiprocessing import Process  # HERE\n"),
    ("proc-getattr-os", "PY-PROC", "import os\ngetattr(os, 'sys' + 'tem')('ls')  # HERE\n"),
    ("proc-alias-chain", "PY-PROC", "import os\nx = os\ny = x\ny.system('id')  # HERE\n"),
    ("proc-star-import", "PY-PROC", "from os import *\nsystem('id')  # HERE\n"),
    ("proc-attrgetter", "PY-PROC", "import operator, os\nrun = operator.attrgetter('system')(os)  # HERE\n"),
    # threads
    ("thread-thread", "PY-THREAD", "import threading\nthreading.Thread(target=print).start()  # HERE\n"),
    ("thread-timer", "PY-THREAD", "from threading import Timer  # HERE\n"),
    ("thread-low-level", "PY-THREAD", "import _thread  # HERE\n"),
    ("thread-futures", "PY-THREAD", "from concurrent.futures import ThreadPoolExecutor  # HERE\n"),
    ("thread-run-in-executor", "PY-THREAD", "import asyncio\n_loop = asyncio.new_event_loop()\n\ndef run(x, y):\n    _loop.run_in_executor(None, lambda: y.copy_(x))  # HERE\n"),
    ("thread-futures-attr", "PY-THREAD", "import concurrent.futures\nex = concurrent.futures.ThreadPoolExecutor(2)  # HERE\n"),
    # signals
    ("signal-signal", "PY-SIGNAL", "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)  # HERE\n"),
    ("signal-alarm", "PY-SIGNAL", "from signal import alarm\nalarm(5)  # HERE\n"),
    ("signal-setitimer", "PY-SIGNAL", "import signal as sg\nsg.setitimer(sg.ITIMER_REAL, 0.1)  # HERE\n"),
    ("signal-kill", "PY-SIGNAL", "import os\nos.kill(os.getppid(), 9)  # HERE\n"),
    # exit
    ("exit-sys", "PY-EXIT", "import sys\n\ndef run(x):\n    sys.exit(0)  # HERE\n"),
    ("exit-os", "PY-EXIT", "import os\nos._exit(0)  # HERE\n"),
    ("exit-atexit", "PY-EXIT", "import atexit  # HERE\n"),
    ("exit-builtin", "PY-EXIT", "def run(x):\n    exit()  # HERE\n"),
    ("exit-raise", "PY-EXIT", "def run(x):\n    raise SystemExit(0)  # HERE\n"),
    # foreign code
    ("ffi-ctypes", "PY-FFI", "import ctypes  # HERE\n"),
    ("ffi-cdll", "PY-FFI", "from ctypes import CDLL as L  # HERE\nL('libcuda.so')\n"),
    ("ffi-cdll-use", "PY-FFI", "import ctypes as c\n\ndef run():\n    return c.CDLL('libcuda.so.1')  # HERE\n"),
    ("ffi-numpy-ctypeslib", "PY-FFI", "import numpy.ctypeslib as npc  # HERE\n"),
    ("ffi-cffi", "PY-FFI", "import cffi  # HERE\n"),
    ("ffi-mmap", "PY-FFI", "import mmap  # HERE\n"),
    ("ffi-load-library", "PY-FFI", "import torch\ntorch.ops.load_library('evil.so')  # HERE\n"),
    ("ffi-cumoduleloaddata", "PY-FFI", "from cuda.bindings import driver\n\ndef run(blob):\n    return driver.cuModuleLoadData(blob)  # HERE\n"),
    ("ffi-triton-load-binary", "PY-FFI", "import triton\nload = triton.runtime.driver.active.utils.load_binary  # HERE\n"),
    # decoding embedded blobs
    ("decode-base64", "PY-DECODE", "import base64  # HERE\n"),
    ("decode-b64decode-alias", "PY-DECODE", "from base64 import b64decode as d  # HERE\n"),
    ("decode-binascii", "PY-DECODE", "import binascii\nbinascii.a2b_base64(b'AAAA')  # HERE\n"),
    ("decode-zlib", "PY-DECODE", "import zlib\n\ndef run():\n    zlib.decompress(b'x')  # HERE\n"),
    ("decode-bz2", "PY-DECODE", "import bz2  # HERE\n"),
    ("decode-lzma", "PY-DECODE", "import lzma  # HERE\n"),
    ("decode-marshal", "PY-DECODE", "import marshal  # HERE\n"),
    ("decode-pickle", "PY-DECODE", "import pickle as p  # HERE\n"),
    ("decode-codecs", "PY-DECODE", "import codecs\ncodecs.decode('flfgrz', 'rot13')  # HERE\n"),
    ("decode-torch-load-pickle", "PY-DECODE", "import io, torch\n\ndef run(blob):\n    return torch.load(io.BytesIO(blob), weights_only=False)  # HERE\n"),
    ("decode-numpy-allow-pickle", "PY-DECODE", "import numpy as np\nW = np.load('w.npy', allow_pickle=True)  # HERE\n"),
    ("decode-fromhex", "PY-DECODE", "data = bytes.fromhex('00ff00ff')  # HERE\n"),
    ("decode-yaml-unsafe-load", "PY-DECODE", "import yaml\nT = yaml.unsafe_load(open('tuning.yaml'))  # HERE\n"),
    ("decode-yaml-load-unsafe-loader", "PY-DECODE", "import yaml as y\n\ndef run(text):\n    return y.load(text, Loader=y.UnsafeLoader)  # HERE\n"),
    ("decode-yaml-from-import-loader", "PY-DECODE", "from yaml import load, Loader  # HERE\n"),
    ("decode-jsonpickle", "PY-DECODE", "import jsonpickle  # HERE\n"),
    ("decode-ruamel-unsafe-typ", "PY-DECODE", "from ruamel.yaml import YAML\n\ndef run(text):\n    return YAML(typ='unsafe').load(text)  # HERE\n"),
    ("decode-ruamel-typ-computed", "PY-DECODE", "import ruamel.yaml\n\ndef run(text, kind):\n    return ruamel.yaml.YAML(typ=kind).load(text)  # HERE\n"),
    ("decode-ruamel-old-load", "PY-DECODE", "import ruamel.yaml\n\ndef run(text):\n    return ruamel.yaml.load(text)  # HERE\n"),
    # embedded binaries
    ("blob-bytes-elf", "PY-BLOB", "IMAGE = b'\\x7fELF\\x02\\x01\\x01\\x00'  # HERE\n"),
    ("blob-str-elf", "PY-BLOB", "IMAGE = '\\x7fELF\\x02\\x01'  # HERE\n"),
    ("blob-base64-elf", "PY-BLOB", f"IMAGE = '{ELF_B64}'  # HERE\n"),
    ("blob-base64-elf-prefix-f0VMR", "PY-BLOB", "IMAGE = 'f0VMRgIBAQAAAAAAAAAAAAIAvgABAAAA'  # HERE\n"),
    ("blob-base64-urlsafe-wrapped", "PY-BLOB", f'IMAGE = """  # HERE\n{ELF_B64_URLSAFE_WRAPPED}\n"""\n'),
    ("blob-hex-elf", "PY-BLOB", f"IMAGE = '{ELF_HEX}'  # HERE\n"),
    ("blob-hex-0x-elf", "PY-BLOB", f"IMAGE = '{ELF_HEX_0X}'  # HERE\n"),
    ("blob-hex-escaped-text", "PY-BLOB", "IMAGE = r'\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00'  # HERE\n"),
    ("blob-int-list", "PY-BLOB", "IMAGE = bytes([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])  # HERE\n"),
    ("blob-fatbin-word", "PY-BLOB", "import struct\nHEADER = struct.pack('<I', 0xBA55ED50)  # HERE\n"),
    ("blob-fatbin-base64", "PY-BLOB", f"FATBIN = '{FATBIN_B64}'  # HERE\n"),
    ("blob-xor-scrambled", "PY-BLOB", f"IMAGE = {ELF_XORED!r}  # HERE\n"),
    ("blob-add-scrambled", "PY-BLOB", f"IMAGE = {ELF_SHIFTED!r}  # HERE\n"),
    ("blob-concatenated", "PY-BLOB", "IMAGE = ('\\x7f' 'ELF')  # HERE\n"),
    # exec / eval / compile
    ("exec-exec", "PY-EXEC", "exec('import os')  # HERE\n"),
    ("exec-eval", "PY-EXEC", "def run(x):\n    return eval('x * 2')  # HERE\n"),
    ("exec-compile", "PY-EXEC", "code = compile('x = 1', '<s>', 'exec')  # HERE\n"),
    ("exec-builtins-module", "PY-EXEC", "import builtins\nbuiltins.exec('pass')  # HERE\n"),
    ("exec-getattr-folded", "PY-EXEC", "import builtins\ngetattr(builtins, 'ex' + 'ec')('pass')  # HERE\n"),
    ("exec-reversed-string", "PY-EXEC", "import builtins\ngetattr(builtins, 'cexe'[::-1])('pass')  # HERE\n"),
    ("exec-dunder-builtins", "PY-EXEC", "f = __builtins__['eval']  # HERE\n"),
    ("exec-renamed", "PY-EXEC", "e = eval  # HERE\n"),
    ("exec-runpy", "PY-EXEC", "import runpy  # HERE\n"),
    # dynamic names
    ("dynamic-import-module", "PY-DYNAMIC", "import importlib\n\ndef run(name):\n    return importlib.import_module(name)  # HERE\n"),
    ("dynamic-dunder-import", "PY-DYNAMIC", "def run(name):\n    return __import__(name)  # HERE\n"),
    ("dynamic-getattr-os", "PY-DYNAMIC", "import os\n\ndef run(attr):\n    return getattr(os, attr)  # HERE\n"),
    # patching
    ("patch-synchronize", "PY-PATCH", "import torch\ntorch.cuda.synchronize = lambda *a: None  # HERE\n"),
    ("patch-tensor-eq", "PY-PATCH", "import torch\ntorch.Tensor.__eq__ = lambda a, b: True  # HERE\n"),
    ("patch-perf-counter", "PY-PATCH", "import time\ntime.perf_counter = lambda: 0.0  # HERE\n"),
    ("patch-setattr", "PY-PATCH", "import torch\nsetattr(torch, 'allclose', lambda *a, **k: True)  # HERE\n"),
    ("patch-builtins", "PY-PATCH", "import builtins\nbuiltins.print = lambda *a: None  # HERE\n"),
    ("patch-alias", "PY-PATCH", "import torch as t\nc = t.cuda\nc.Event = object  # HERE\n"),
    ("patch-from-import", "PY-PATCH", "from torch import cuda\ncuda.synchronize = print  # HERE\n"),
    ("patch-delete", "PY-PATCH", "import torch\ndel torch.cuda.synchronize  # HERE\n"),
    ("patch-type-of", "PY-PATCH", "def run(x):\n    type(x).__add__ = lambda a, b: a  # HERE\n"),
    ("patch-class-of-instance", "PY-PATCH", "def run(x):\n    x.__class__.__eq__ = lambda a, b: True  # HERE\n"),
    ("patch-setattr-class-of-instance", "PY-PATCH", "def run(x):\n    setattr(type(x), '__eq__', None)  # HERE\n"),
    ("patch-class-swap", "PY-PATCH", "class Fake:\n    pass\n\ndef run(x):\n    x.__class__ = Fake  # HERE\n"),
    ("patch-vars", "PY-PATCH", "import torch\nvars(torch)['mm'] = print  # HERE\n"),
    ("patch-dunder-dict", "PY-PATCH", "import torch\ntorch.cuda.__dict__['synchronize'] = print  # HERE\n"),
    ("patch-object-setattr", "PY-PATCH", "import torch\nobject.__setattr__(torch.cuda, 'synchronize', print)  # HERE\n"),
    ("patch-aten-library", "PY-PATCH", "import torch\nlib = torch.library.Library('aten', 'IMPL')  # HERE\n"),
    ("patch-partial-setattr", "PY-PATCH", "import functools, time\n_install = functools.partial(setattr, time)  # HERE\n_install('perf_counter', lambda: 0.0)\n"),
    ("patch-map-setattr", "PY-PATCH", "import torch\nlist(map(setattr, [torch.cuda], ['synchronize'], [print]))  # HERE\n"),
    ("patch-operator-setitem", "PY-PATCH", "import operator, time\noperator.setitem(vars(time), 'perf_counter', lambda: 0.0)  # HERE\n"),
    ("patch-list-holder", "PY-PATCH", "import time\n_clocks = [time]\n_clocks[0].perf_counter = lambda: 0.0  # HERE\n"),
    ("patch-dict-holder", "PY-PATCH", "import torch\nmods = {'cuda': torch.cuda}\nmods['cuda'].synchronize = print  # HERE\n"),
    ("patch-class-attribute-holder", "PY-PATCH", "import time\n\nclass Holder:\n    clock = time\n\nHolder.clock.perf_counter = lambda: 0.0  # HERE\n"),
    ("patch-default-argument", "PY-PATCH", "import time\n\ndef install(m=time):\n    m.perf_counter = lambda: 0.0  # HERE\n\ninstall()\n"),
    ("patch-mock", "PY-PATCH", "from unittest import mock  # HERE\n"),
    ("patch-inside-function", "PY-PATCH", "import torch.cuda as tc\n\ndef run(x):\n    tc.Event.elapsed_time = lambda *a: 1e-3  # HERE\n"),
    ("patch-computed-setattr", "PY-PATCH", "import torch\n\ndef run(name, f):\n    setattr(torch.cuda, name, f)  # HERE\n"),
    # the harness
    ("harness-import", "PY-HARNESS", "import solbench  # HERE\n"),
    ("harness-from", "PY-HARNESS", "from solbench.bench import timing  # HERE\n"),
    ("harness-importlib", "PY-HARNESS", "import importlib\nt = importlib.import_module('solbench.bench.timing')  # HERE\n"),
    ("harness-main", "PY-HARNESS", "import __main__  # HERE\n"),
    ("harness-patch", "PY-HARNESS", "import solbench.bench.timing as tm  # HERE\ntm.measure = None\n"),
    # import system
    ("sysmodules-store", "PY-SYSMODULES", "import sys\nsys.modules['torch'] = None  # HERE\n"),
    ("sysmodules-pop", "PY-SYSMODULES", "import sys\nsys.modules.pop('triton')  # HERE\n"),
    ("sysmodules-read", "PY-SYSMODULES", "import sys\nworker = sys.modules['__main__']  # HERE\n"),
    ("sysmodules-meta-path", "PY-SYSMODULES", "import sys\nsys.meta_path.insert(0, object())  # HERE\n"),
    # introspection
    ("introspect-getframe", "PY-INTROSPECT", "import sys\nf = sys._getframe(1)  # HERE\n"),
    ("introspect-stack", "PY-INTROSPECT", "import inspect\nframes = inspect.stack()  # HERE\n"),
    ("introspect-f-back", "PY-INTROSPECT", "def run(frame):\n    return frame.f_back.f_locals  # HERE\n"),
    ("introspect-settrace", "PY-INTROSPECT", "import sys\nsys.settrace(lambda *a: None)  # HERE\n"),
    ("introspect-setprofile", "PY-INTROSPECT", "import sys\nsys.setprofile(None)  # HERE\n"),
    ("introspect-gc-objects", "PY-INTROSPECT", "import gc\nobjs = gc.get_objects()  # HERE\n"),
    ("introspect-gc-referrers", "PY-INTROSPECT", "import gc\n\ndef run(x):\n    return gc.get_referrers(x)  # HERE\n"),
    ("introspect-tb-frame", "PY-INTROSPECT", "try:\n    1 / 0\nexcept Exception as e:\n    g = e.__traceback__.tb_frame  # HERE\n"),
    ("introspect-globals", "PY-INTROSPECT", "def run(fn):\n    return fn.__globals__  # HERE\n"),
    ("introspect-subclasses", "PY-INTROSPECT", "classes = ().__class__.__base__.__subclasses__()  # HERE\n"),
    ("introspect-getattr-frame", "PY-INTROSPECT", "def run(frame):\n    return getattr(frame, 'f_globals')  # HERE\n"),
    ("introspect-audit-hook", "PY-INTROSPECT", "import sys\nsys.addaudithook(print)  # HERE\n"),
    # debuggers, profilers and frame readers by other names: each gave frames (the worker's among them) or ran code
    # held in a string while the analysis accepted the source
    ("introspect-bdb", "PY-INTROSPECT", "import bdb\n\nclass Watch(bdb.Bdb):  # HERE\n    pass\n"),
    ("introspect-pdb-run", "PY-INTROSPECT", 'import pdb\npdb.run("import gc")  # HERE\n'),
    ("introspect-cprofile", "PY-INTROSPECT", 'import cProfile\ncProfile.run("import gc")  # HERE\n'),
    ("introspect-trace-module", "PY-INTROSPECT", 'from trace import Trace  # HERE\n'),
    ("introspect-logging-frame", "PY-INTROSPECT", "import logging\nframe = logging.currentframe()  # HERE\n"),
    ("introspect-frame-locals", "PY-INTROSPECT", "import inspect\n\ndef run(frame):\n    return inspect.getargvalues(frame).locals  # HERE\n"),
    ("introspect-methodcaller", "PY-INTROSPECT", 'import gc, operator\nobjects = operator.methodcaller("get_objects")(gc)  # HERE\n'),
    ("introspect-attrgetter-dotted", "PY-INTROSPECT", 'import operator\n\ndef run(e):\n    return operator.attrgetter("__traceback__.tb_frame.f_back")(e)  # HERE\n'),
    ("dynamic-import-as-value", "PY-DYNAMIC", 'modules = list(map(__import__, ["gc"]))  # HERE\n'),
    ("dynamic-import-in-reduce", "PY-DYNAMIC", 'class Loader:\n    def __reduce__(self):\n        return (__import__, ("gc",))  # HERE\n'),
    ("dynamic-getattr-as-value", "PY-DYNAMIC", 'import functools, gc\nobjects = functools.reduce(getattr, ["get_objects"], gc)()  # HERE\n'),
    ("dynamic-attrgetter-computed", "PY-DYNAMIC", 'import operator\n\ndef run(o, name):\n    return operator.attrgetter(name)(o)  # HERE\n'),
    ("exec-timeit-string", "PY-EXEC", 'import timeit\ntimeit.timeit("import gc; gc.get_objects()", number=1)  # HERE\n'),
    ("exec-doctest", "PY-EXEC", "import doctest\ndoctest.run_docstring_examples(print, {})  # HERE\n"),
    ("exec-string-annotation", "PY-EXEC", "import typing\n\ndef f(x: \"__import__('gc').get_objects()\"): pass\nhints = typing.get_type_hints(f)  # HERE\n"),
    ("exec-annotations-eval-str", "PY-EXEC", "import inspect\n\ndef f(x: 'len'): pass\nhints = inspect.get_annotations(f, eval_str=True)  # HERE\n"),
    ("exec-logging-config", "PY-EXEC", 'import logging.config  # HERE\nlogging.config.dictConfig({"version": 1, "handlers": {"h": {"()": "gc.get_objects"}}})\n'),
    ("build-flags-macro", "PY-BUILD-FLAGS", 'from torch.utils.cpp_extension import load_inline\n_e = load_inline(name="m", cpp_sources="", extra_cflags=["-DF=PyEval_GetFrame"])  # HERE\n'),
    ("decode-torch-package", "PY-DECODE", 'import io, torch\nimporter = torch.package.PackageImporter(io.BytesIO(b""))  # HERE\n'),
    ("exec-resolve-name", "PY-EXEC", 'import pkgutil\nget_objects = pkgutil.resolve_name("gc:get_objects")  # HERE\n'),
    # profiler
    ("profiler-stop", "PY-PROFILER", "import torch\ntorch.cuda.profiler.stop()  # HERE\n"),
    ("profiler-cudart", "PY-PROFILER", "import torch\ntorch.cuda.cudart().cudaProfilerStop()  # HERE\n"),
    ("profiler-cupti", "PY-PROFILER", "import cupti  # HERE\n"),
    ("device-nvml", "PY-DEVICE", "import pynvml  # HERE\n"),
    # environment
    ("env-setitem", "PY-ENV", "import os\nos.environ['CUDA_LAUNCH_BLOCKING'] = '1'  # HERE\n"),
    ("env-update", "PY-ENV", "import os\nos.environ.update({'A': 'b'})  # HERE\n"),
    ("env-setdefault", "PY-ENV", "import os\nos.environ.setdefault('TORCH_CUDA_ARCH_LIST', '9.0')  # HERE\n"),
    ("env-putenv", "PY-ENV", "import os\nos.putenv('A', 'b')  # HERE\n"),
    ("env-alias", "PY-ENV", "import os\nenv = os.environ\nenv['X'] = '1'  # HERE\n"),
    ("env-delete", "PY-ENV", "import os\ndel os.environ['X']  # HERE\n"),
    ("env-from-import", "PY-ENV", "from os import environ\nenviron['X'] = '1'  # HERE\n"),
    ("env-read", "PY-ENV-READ", "import os\nflag = os.environ.get('SOLBENCH_MODE')  # HERE\n"),
    ("env-getenv", "PY-ENV-READ", "import os\nflag = os.getenv('SOLBENCH_MODE')  # HERE\n"),
    # files
    ("write-open-w", "PY-FILE-WRITE", "def run(x):\n    open('out.txt', 'w').write('x')  # HERE\n"),
    ("write-open-mode-kw", "PY-FILE-WRITE", "def run(x, p):\n    with open(p, mode='ab') as f:  # HERE\n        f.write(b'x')\n"),
    ("write-open-computed-mode", "PY-FILE-WRITE", "def run(m):\n    open('x', m)  # HERE\n"),
    ("write-path-write-text", "PY-FILE-WRITE", "from pathlib import Path\nPath('x.txt').write_text('y')  # HERE\n"),
    ("write-os-remove", "PY-FILE-WRITE", "import os\nos.remove('x')  # HERE\n"),
    ("write-shutil", "PY-FILE-WRITE", "import shutil  # HERE\n"),
    ("write-tempfile-elsewhere", "PY-FILE-WRITE", "import tempfile\nd = tempfile.mkdtemp(dir='/var/tmp')  # HERE\n"),
    ("write-tempfile-as-value", "PY-FILE-WRITE", "import tempfile\nmake = tempfile.mkstemp  # HERE\n"),
    ("write-tempfile-tempdir", "PY-FILE-WRITE", "import tempfile\ntempfile.tempdir = '/x'  # HERE\n"),
    ("write-torch-save", "PY-FILE-WRITE", "import torch\n\ndef run(x):\n    torch.save(x, 'x.pt')  # HERE\n"),
    ("write-os-open", "PY-FILE-WRITE", "import os\nfd = os.open('x', os.O_WRONLY | os.O_CREAT)  # HERE\n"),
    ("write-path-unlink", "PY-FILE-WRITE", "from pathlib import Path\np = Path('x')\np.unlink()  # HERE\n"),
    ("write-tofile", "PY-FILE-WRITE", "def run(x):\n    x.numpy().tofile('x.bin')  # HERE\n"),
    ("read-open", "PY-FILE-READ", "def run(x):\n    data = open('weights.bin', 'rb').read()  # HERE\n"),
    ("read-numpy-load", "PY-FILE-READ", "import numpy as np\nW = np.load('w.npy')  # HERE\n"),
    ("read-listdir", "PY-FILE-READ", "import os\nnames = os.listdir('.')  # HERE\n"),
    ("read-path-read-text", "PY-FILE-READ", "from pathlib import Path\ntext = Path('notes.txt').read_text()  # HERE\n"),
    ("read-torch-load", "PY-FILE-READ", "import torch\n\ndef run(f):\n    return torch.load(f)  # HERE\n"),
    ("escape-absolute", "PY-PATH-ESCAPE", "secret = open('/etc/passwd').read()  # HERE\n"),
    ("escape-dotdot", "PY-PATH-ESCAPE", "ref = open('../reference.py').read()  # HERE\n"),
    ("escape-parent-parent", "PY-PATH-ESCAPE", "from pathlib import Path\nother = (Path(__file__).parent.parent / 'x' / 'main.py').read_text()  # HERE\n"),
    ("escape-dirname-twice", "PY-PATH-ESCAPE", "import os\nd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\nnames = os.listdir(d)  # HERE\n"),
    ("escape-join-dotdot", "PY-PATH-ESCAPE", "import os\nBASE = os.path.dirname(__file__)\ntext = open(os.path.join(BASE, '..', 'x.py')).read()  # HERE\n"),
    ("escape-home", "PY-PATH-ESCAPE", "import os\nkey = open(os.path.expanduser('~/.ssh/id_rsa')).read()  # HERE\n"),
    ("escape-path-home", "PY-PATH-ESCAPE", "from pathlib import Path\ncfg = (Path.home() / '.cache' / 'x').read_bytes()  # HERE\n"),
    ("escape-fstring-proc", "PY-PATH-ESCAPE", "import os\nmaps = open(f'/proc/{os.getpid()}/maps').read()  # HERE\n"),
    ("escape-system-path-literal", "PY-PATH-ESCAPE", "P = '/proc/self/environ'  # HERE\n"),
    ("escape-sep-join", "PY-PATH-ESCAPE", "import os\nROOTS = [os.sep.join(['', 'dev', 'shm'])]  # HERE\n"),
    ("escape-bytes-decoded", "PY-PATH-ESCAPE", "ROOTS = [bytes([47, 100, 101, 118, 47, 115, 104, 109]).decode()]  # HERE\n"),
    ("escape-concatenated", "PY-PATH-ESCAPE", "root = '/' + 'pr' + 'oc'  # HERE\n"),
    ("escape-pardir", "PY-PATH-ESCAPE", "import os\nsrc = open(os.path.join(os.path.dirname(__file__), os.pardir, 'reference.py')).read()  # HERE\n"),
    ("write-memmap-default-mode", "PY-FILE-WRITE", "import numpy\n\ndef table(path):\n    return numpy.memmap(path, dtype=numpy.float32, shape=(16,))  # HERE\n"),
    ("write-memmap-computed-mode", "PY-FILE-WRITE", "import numpy as np, os\nP = 'memo.bin'\nm = np.memmap(P, mode='r+' if os.path.exists(P) else 'w+', shape=(4,))  # HERE\n"),
    ("escape-through-variable", "PY-PATH-ESCAPE", "TARGET = '/tmp/leak.txt'\n\ndef run(x):\n    open(TARGET, 'w').write(str(x))  # HERE\n"),
    # caching across calls (warn)
    ("cache-lru-tensor", "PY-CACHE", "import functools\nimport torch\n\n@functools.lru_cache(maxsize=None)  # HERE\ndef run(x: torch.Tensor):\n    return x * 2\n"),
    ("cache-cache-tensor-attrs", "PY-CACHE", "from functools import cache\n\n@cache  # HERE\ndef run(x, w):\n    return x.contiguous() @ w\n"),
    ("cache-call-form", "PY-CACHE", "import functools\n\ndef _run(x):\n    return x.float() * 2\n\nrun = functools.lru_cache(maxsize=None)(_run)  # HERE\n"),
    ("cache-data-ptr-dict", "PY-CACHE", "_CACHE = {}\n\ndef run(x):\n    key = (x.data_ptr(), x.shape)\n    if key in _CACHE:\n        return _CACHE[key]\n    out = x * 2\n    _CACHE[key] = out  # HERE\n    return out\n"),
    ("cache-id", "PY-CACHE", "results = dict()\n\ndef run(x):\n    results[id(x)] = x * 2  # HERE\n    return results[id(x)]\n"),
    ("cache-weak", "PY-CACHE", "import weakref\n_seen = weakref.WeakKeyDictionary()\n\ndef run(x):\n    _seen[x] = x.sum()  # HERE\n"),
    ("cache-setdefault", "PY-CACHE", "_CACHE = {}\n\ndef run(x):\n    return _CACHE.setdefault(x.data_ptr(), x * 2)  # HERE\n"),
    ("ptr-compare", "PY-PTR-KEY", "def run(a, b):\n    if a.data_ptr() == b.data_ptr():  # HERE\n        return a\n"),
    ("ptr-subscript", "PY-PTR-KEY", "def run(x, table):\n    return table[x.data_ptr()]  # HERE\n"),
    ("ptr-dict-key", "PY-PTR-KEY", "def run(x, out):\n    return {x.data_ptr(): out}  # HERE\n"),
    ("ptr-set-add", "PY-PTR-KEY", "def run(x, seen):\n    seen.add(int(x.data_ptr()))  # HERE\n"),
    ("ptr-tuple-key", "PY-PTR-KEY", "def run(a, b, memo):\n    return memo.get((a.data_ptr(), b.data_ptr()))  # HERE\n"),
    # precision flags, also through aliases
    ("precision-tf32", "PY-PRECISION", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True  # HERE\n"),
    ("precision-alias", "PY-PRECISION", "import torch as t\nt.backends.cuda.matmul.allow_tf32 = True  # HERE\n"),
    ("path-from-environment-default", "PY-PATH-ESCAPE", "import os\nfrom pathlib import Path\nroot = Path(os.environ.get('CUDA_HOME', '/usr/local/cuda'))\n"
     "src = (root / 'include' / 'x.h').read_text()  # HERE\n"),
    ("path-from-getenv-or", "PY-PATH-ESCAPE", "import os\nroot = os.getenv('X') or '/opt/x'\nopen(os.path.join(root, 'y'))  # HERE\n"),
    ("path-from-environ-item", "PY-PATH-ESCAPE", "import os\nopen(os.environ['DATA'] + '/y')  # HERE\n"),
    ("cdll-absolute", "PY-PATH-ESCAPE", "import ctypes\nlib = ctypes.CDLL('/opt/vendor/libfast.so')  # HERE\n"),
    ("memo-on-scalar", "PY-MEMO", "import torch\n_CACHE = {}\n\ndef run(x, theta):\n    if theta not in _CACHE:\n        _CACHE[theta] = torch.cos(x * theta)\n"
     "    return _CACHE[theta]  # HERE\n"),
    ("memo-on-shapes-cloned", "PY-MEMO", "import torch\n_C = {}\n\ndef run(x):\n    key = tuple(x.shape)\n    out = _C.get(key)\n    if out is None:\n"
     "        out = _C[key] = x * 2\n    return out.clone()  # HERE\n"),
    ("memo-expanded-in-a-tuple", "PY-MEMO", "import torch\n_T = {}\n\ndef run(x, seq_len):\n    table = _T.setdefault(seq_len, torch.arange(seq_len))\n"
     "    return x, table.expand(x.shape[0], -1)  # HERE\n"),
    ("static-output-written-by-every-call", "PY-STATIC-OUTPUT", "import torch\n_OUT = {}\n\ndef run(x, alpha):\n    key = tuple(x.shape)\n"
     "    if key not in _OUT:\n        _OUT[key] = torch.empty_like(x)\n    torch.mul(x, alpha, out=_OUT[key])\n    return _OUT[key]  # HERE\n"),
    ("static-output-copied-into", "PY-STATIC-OUTPUT", "import torch\n_OUT = {}\n\ndef run(x):\n    y = _OUT.setdefault(x.shape, torch.empty_like(x))\n"
     "    y.copy_(x * 2)\n    return y  # HERE\n"),
    ("env-tuning-warned", "PY-ENV-TUNING", "import os\nos.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'  # HERE\n"),
    ("tempfile-tmpdir-warned", "PY-FILE-WRITE-OWN", "import tempfile\nd = tempfile.mkdtemp()  # HERE\n"),
    ("tempfile-own-folder-warned", "PY-FILE-WRITE-OWN", "import tempfile\nfrom pathlib import Path\nf = tempfile.NamedTemporaryFile(dir=Path(__file__).parent)  # HERE\n"),
    ("write-own-folder-warned", "PY-FILE-WRITE-OWN", "from pathlib import Path\n(Path(__file__).parent / 'gen.cu').write_text('x')  # HERE\n"),
    ("cudart-reviewed", "PY-CUDART", "import torch\nrt = torch.cuda.cudart()  # HERE\n"),
    ("downcast-half", "PY-DOWNCAST", "import torch\n\ndef run(a, b):\n    return (a.half() @ b.half()).float()  # HERE\n"),
    ("downcast-to", "PY-DOWNCAST", "import torch\n\ndef run(a):\n    return a.to(torch.bfloat16).sum()  # HERE\n"),
    ("env-tuning-mixed", "PY-ENV", "import os\nos.environ.update({'TORCHINDUCTOR_X': '1', 'LD_PRELOAD': 'evil.so'})  # HERE\n"),
    ("env-tuning-computed", "PY-ENV", "import os\n\ndef run(k):\n    os.environ[k] = '1'  # HERE\n"),
    ("write-above-own-folder", "PY-PATH-ESCAPE", "import os\nFOLDER = os.path.dirname(__file__)\nopen(os.path.join(FOLDER, '..', 'x'), 'w')  # HERE\n"),
    ("importlib-library-name", "PY-SYSMODULES", "import importlib.util, os, sys\npath = os.path.join(os.path.dirname(__file__), 'helper.py')\n"
     "spec = importlib.util.spec_from_file_location('time', path)\nmodule = importlib.util.module_from_spec(spec)\nsys.modules['time'] = module  # HERE\n"),
    ("importlib-foreign-file", "PY-SYSMODULES", "import importlib.util, sys\nspec = importlib.util.spec_from_file_location('h', '/opt/h.py')\n"
     "module = importlib.util.module_from_spec(spec)\nsys.modules['h'] = module  # HERE\n"),
    ("cudart-l2", "PY-L2", "import torch\ntorch.cuda.cudart().cudaStreamSetAttribute(0, 1, 2)  # HERE\n"),
    ("cudart-profiler", "PY-PROFILER", "import torch\nrt = torch.cuda.cudart()\nrt.cudaProfilerStop()  # HERE\n"),
    ("precision-cuda-from", "PY-PRECISION", "from torch.backends import cuda\ncuda.matmul.allow_tf32 = True  # HERE\n"),
    ("precision-matmul-high", "PY-PRECISION", "import torch\ntorch.set_float32_matmul_precision('high')  # HERE\n"),
    ("precision-matmul-medium", "PY-PRECISION", "from torch import set_float32_matmul_precision as p\np('medium')  # HERE\n"),
    ("precision-fp16-accumulation", "PY-PRECISION", "import torch\ntorch.backends.cuda.matmul.allow_fp16_accumulation = True  # HERE\n"),
    ("precision-restore-other-flag", "PY-PRECISION", "import torch\nsaved = torch.backends.cudnn.allow_tf32\ntorch.backends.cuda.matmul.allow_tf32 = saved  # HERE\n"),
    ("precision-setattr", "PY-PRECISION", "import torch\nsetattr(torch.backends.cuda.matmul, 'allow_tf32', True)  # HERE\n"),
    ("precision-fp32-precision", "PY-PRECISION", "import torch\ntorch.backends.cuda.matmul.fp32_precision = 'tf32'  # HERE\n"),
    ("precision-in-function", "PY-PRECISION", "import torch\n\ndef run(a, b):\n    torch.backends.cuda.matmul.allow_tf32 = True  # HERE\n    return a @ b\n"),
    ("precision-c-api", "PY-PRECISION", "import torch\ntorch._C._set_cublas_allow_tf32(True)  # HERE\n"),
    # L2 persistence, also in inline C++
    ("l2-cuda-python", "PY-L2", "from cuda import cudart\ncudart.cudaStreamSetAttribute(0, 1, None)  # HERE\n"),
    ("l2-struct-field", "PY-L2", "def run(attr, n):\n    attr.accessPolicyWindow.num_bytes = n  # HERE\n"),
    ("l2-inline-cpp", "CPP-L2", 'SRC = """\n#include <cuda_runtime.h>\nvoid pin(cudaStream_t s) {\n  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);  // HERE\n}\n"""\n'),
    ("l2-inline-cpp-window", "CPP-L2", 'SRC = r"""\n#include <torch/extension.h>\nvoid pin(cudaStream_t s, void* p) {\n  cudaStreamAttrValue v;\n  v.accessPolicyWindow.base_ptr = p;  // HERE\n}\n"""\n'),
    ("l2-string-name", "PY-L2", "import ctypes as c\nfn = 'cudaStreamSetAttribute'  # HERE\n"),
    # warnings
    ("opaque-base64", "PY-OPAQUE", f"DATA = '{RANDOM_B64}'  # HERE\n"),
    ("opaque-long-bytes", "PY-OPAQUE", f"DATA = {bytes(range(32, 127)) * 50!r}  # HERE\n"),
    ("getattr-computed-torch", "PY-GETATTR", "import torch\n\ndef run(x, name):\n    return x.to(getattr(torch, name))  # HERE\n"),
    ("triton-inline-asm", "PY-ASM", "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.int32, is_pure=True, pack=1)  # HERE\n"),
    ("dispatch-mode", "PY-DISPATCH", "from torch.overrides import TorchFunctionMode  # HERE\n"),
    ("syspath", "PY-SYSPATH", "import os, sys\nsys.path.insert(0, os.path.dirname(__file__))  # HERE\n"),
    ("config-triton-knobs", "PY-CONFIG", "import triton\ntriton.knobs.autotuning.print = True  # HERE\n"),
    ("inline-cpp-asm-warn", "CPP-ASM", 'SRC = """\n#include <cuda_runtime.h>\n__device__ unsigned t() {\n  unsigned x; asm volatile("mov.u32 %0, %%globaltimer_lo;" : "=r"(x));  // HERE\n  return x;\n}\n"""\n'),
]


@pytest.mark.parametrize("rule, source", [pytest.param(rule, source, id=name) for name, rule, source in PY_ATTACKS])
def test_python_attack_is_reported_on_its_line(rule: str, source: str):
    findings = analyze_python(source, "attack.py")
    line = marked(source)
    assert (rule, line) in rules_at(findings), f"expected {rule} at line {line}, got {findings}"
    found = next(f for f in findings if f.rule == rule and f.line == line)
    assert found.severity == RULES[rule][0]
    assert found.path == "attack.py"
    assert found.message and "\n" not in found.message


# --- Python near misses: (rule that must stay silent, source) ------------------------------------------

PY_NEAR_MISSES: list[tuple[str, str, str]] = [
    ("net-local-name", "PY-NET", "socket_count = 3\n\ndef run(socket):\n    return socket.send(socket_count)\n"),
    ("net-lookalike-module", "PY-NET", "import sockets_config\nimport http_utils_local\n"),
    ("proc-os-harmless", "PY-PROC", "import os\nn = os.cpu_count()\npid = os.getpid()\np = os.path.join('a', 'b')\n"),
    ("proc-local-system", "PY-PROC", "def system(x):\n    return x\n\nsystem('ls')\n"),
    ("thread-lock", "PY-THREAD", "import threading\nlock = threading.Lock()\nlocal = threading.local()\n"),
    ("signal-constant", "PY-SIGNAL", "import signal\nprint(signal.SIGINT)\n"),
    ("exit-local-shadow", "PY-EXIT", "def exit():\n    return 0\n\nexit()\n"),
    ("exit-other-exception", "PY-EXIT", "def run(x):\n    raise ValueError('bad shape')\n"),
    ("ffi-custom-op", "PY-FFI", "import torch\n\ndef run(x):\n    return torch.ops.mylib.kernel(x)\n"),
    ("ffi-cuda-python-stream", "PY-FFI", "from cuda.bindings import driver\n\ndef run(s):\n    driver.cuStreamSynchronize(s)\n"),
    ("decode-str-methods", "PY-DECODE", "def run(x, raw):\n    return 'abc'.encode(), raw.decode('utf-8')\n"),
    ("blob-near-elf", "PY-BLOB", "LUT = bytes([0x7f, 0x45, 0x4c, 0x47, 1, 2, 3])\nTEXT = 'ELF files are not welcome'\n"),
    ("blob-random-base64", "PY-BLOB", f"DATA = '{RANDOM_B64}'\n"),
    ("exec-torch-compile", "PY-EXEC", "import re\nimport torch\n\ndef run(m):\n    m.eval()\n    f = torch.compile(m)\n    return re.compile('x'), f\n"),
    ("exec-local-eval", "PY-EXEC", "def run(model, eval=True):\n    return eval\n"),
    ("dynamic-getattr-self", "PY-DYNAMIC", "class K:\n    def get(self, name):\n        return getattr(self, name)\n"),
    ("dynamic-constant-getattr", "PY-DYNAMIC", "import torch\ndt = getattr(torch, 'float16')\n"),
    ("patch-own-holders", "PY-PATCH", "import torch\n\nclass Cfg:\n    dtype = torch.float16\n\nitems = [Cfg()]\nitems[0].block = 64\nCfg.block = 128\n\ndef run(x, scale=2.0, out=None):\n    cfg = Cfg()\n    cfg.block = x.shape[-1]\n    return x * scale\n"),
    ("patch-setattr-own-object", "PY-PATCH", "class Cfg:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n            setattr(self, k, v)\n"),
    ("path-join-relative", "PY-PATH-ESCAPE", "import os\nname = '/'.join(['csrc', 'kernel.cu'])\nsep = os.sep\n"),
    ("read-memmap-readonly", "PY-FILE-WRITE", "import numpy\nW = numpy.memmap('weights.bin', dtype=numpy.float32, mode='r')\n"),
    ("patch-self", "PY-PATCH", "class Runner:\n    def __init__(self):\n        self.calls = 0\n        self.__dict__.update({'x': 1})\n"),
    ("patch-own-class", "PY-PATCH", "class Cfg:\n    pass\n\nCfg.block = 128\n"),
    ("patch-backends-config", "PY-PATCH", "import torch\nimport torch._dynamo\ntorch.backends.cudnn.benchmark = True\ntorch._dynamo.config.cache_size_limit = 8\n"),
    ("patch-own-instance", "PY-PATCH", "import torch\n\ndef run(x):\n    s = torch.cuda.Stream()\n    s.tag = 1\n    x.meta = 1\n"),
    ("patch-custom-op-own-namespace", "PY-PATCH", "import torch\n\n@torch.library.custom_op('mylib::scale', mutates_args=())\ndef scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n"),
    ("harness-lookalike", "PY-HARNESS", "import solbench_helpers\n"),
    ("sysmodules-version", "PY-SYSMODULES", "import sys\nv = sys.version_info\n"),
    ("introspect-lookups-harmless", "PY-INTROSPECT",
     'import logging, operator, typing\nlog = logging.getLogger(__name__)\nshapes = sorted([], key=operator.attrgetter("shape"))\n'
     'ToTensor = typing.Callable[[int], int]\nsize = operator.methodcaller("size", 0)\n'),
    ("introspect-harmless", "PY-INTROSPECT", "import gc, inspect, traceback\ngc.collect()\nsig = inspect.signature(print)\nmsg = traceback.format_exc()\n"),
    ("profiler-nvtx", "PY-PROFILER", "import torch\n\ndef run(x):\n    torch.cuda.nvtx.range_push('k')\n    with torch.profiler.record_function('k'):\n        y = x * 2\n    torch.cuda.nvtx.range_pop()\n    return y\n"),
    ("decode-torch-load-weights-only", "PY-DECODE", "import torch\nW = torch.load('w.pt', weights_only=True)\n"),
    ("decode-yaml-safe", "PY-DECODE", "import yaml\nT = yaml.safe_load('a: 1')\nU = yaml.load('a: 1', Loader=yaml.SafeLoader)\n"),
    ("decode-ruamel-safe", "PY-DECODE", "from ruamel.yaml import YAML\nT = YAML(typ='safe').load('a: 1')\nU = YAML().load('a: 1')\n"),
    ("env-none", "PY-ENV", "import os\nflag = os.environ.get('X')\n"),
    ("write-str-replace", "PY-FILE-WRITE", "def run(name):\n    return name.replace('a', 'b').rename if False else name\n"),
    ("read-own-source", "PY-FILE-READ", "import os\nHERE_ = os.path.dirname(os.path.abspath(__file__))\nwith open(os.path.join(HERE_, 'kernel.cu')) as f:\n    SRC = f.read()\n"),
    ("read-own-source-pathlib", "PY-FILE-READ", "from pathlib import Path\nSRC = (Path(__file__).parent / 'kernel.cu').read_text()\nHDR = Path(__file__).with_name('kernel.h').read_text()\n"),
    ("cache-shapes", "PY-CACHE", "import functools\n_K = {}\n\n@functools.lru_cache(maxsize=64)\ndef cfg(M: int, N: int, dtype):\n    return 64 if M < 1024 else 128\n\ndef run(x):\n    key = (tuple(x.shape), x.dtype)\n    _K[key] = cfg(x.shape[0], x.shape[1], x.dtype)\n    return x * _K[key]\n"),
    ("ptr-kernel-arg", "PY-PTR-KEY", "def run(kernel, x, out):\n    assert x.data_ptr() % 16 == 0\n    assert out.data_ptr() != 0\n    kernel(x.data_ptr(), out.data_ptr(), x.numel())\n"),
    ("memo-kernel-and-config-caches", "PY-MEMO", "import torch\n_K = {}\n_CFG = {1024: 64}\n\ndef _kernel(dtype):\n    if dtype not in _K:\n"
     "        _K[dtype] = torch.compile(lambda a: a * 2)\n    return _K[dtype]\n\ndef run(x):\n    block = _CFG.get(x.shape[0], 128)\n"
     "    return _kernel(x.dtype)(x) * block\n"),
    ("env-tuning", "PY-ENV", "import os\nos.environ['CUBLASLT_WORKSPACE_SIZE'] = '4096'\nos.environ.setdefault('TORCHINDUCTOR_MAX_AUTOTUNE', '1')\n"
     "os.environ.update({'PYTORCH_TUNABLEOP_ENABLED': '1', 'CUTE_DSL_ARCH': 'sm_90a'})\nos.environ.update(TORCH_BLAS_PREFER_CUBLASLT='1')\n"),
    ("write-own-folder", "PY-FILE-WRITE", "import os\nHERE = os.path.dirname(os.path.abspath(__file__))\nwith open(os.path.join(HERE, 'gen.cu'), 'w') as f:\n"
     "    f.write('// generated')\nfrom pathlib import Path\n(Path(__file__).parent / 'tuning.json').write_text('{}')\n"),
    ("importlib-own-module", "PY-SYSMODULES", "import importlib.util, os, sys\npath = os.path.join(os.path.dirname(__file__), 'helper.py')\n"
     "spec = importlib.util.spec_from_file_location('my_helper', path)\nmodule = importlib.util.module_from_spec(spec)\n"
     "sys.modules['my_helper'] = module\nspec.loader.exec_module(module)\n"),
    ("cudart-host-register", "PY-PROFILER", "import torch\ncudart = torch.cuda.cudart()\ncudart.cudaHostRegister(0, 0, 0)\n"),
    ("precision-defaults", "PY-PRECISION", "import torch\ntorch.backends.cudnn.allow_tf32 = True\n"
     "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True\ntorch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True\n"),
    ("precision-restored", "PY-PRECISION", "import torch\nsaved = torch.backends.cuda.matmul.allow_tf32\n"
     "torch.backends.cuda.matmul.allow_tf32 = saved\nmode = torch.get_float32_matmul_precision()\ntorch.set_float32_matmul_precision(mode)\n"),
    ("precision-false", "PY-PRECISION", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\ntorch.backends.cudnn.allow_tf32 = False\ntorch.set_float32_matmul_precision('highest')\nflag = torch.backends.cuda.matmul.allow_tf32\n"),
    ("l2-docstring", "PY-L2", '"""We never call cudaStreamSetAttribute nor set an accessPolicyWindow."""\n\ndef run(x):\n    """No cudaLimitPersistingL2CacheSize either."""\n    return x\n'),
]


@pytest.mark.parametrize("rule, source", [pytest.param(rule, source, id=name) for name, rule, source in PY_NEAR_MISSES])
def test_python_near_miss_stays_silent(rule: str, source: str):
    findings = analyze_python(source, "near.py")
    assert rule not in {f.rule for f in findings}, findings
    assert not rejects(findings), findings


# --- YAML: loaders that build Python objects (python/* tags run code), and such tags in data files -------
# (name, source, the lines that must carry a PY-DECODE finding: the import of a banned name, its use and the call)

YAML_LOADS: list[tuple[str, str, set[int]]] = [
    ("unsafe-load", "import yaml\nT = yaml.unsafe_load('a: 1')\n", {2}),
    ("unsafe-load-all", "import yaml\nT = list(yaml.unsafe_load_all('a: 1'))\n", {2}),
    ("full-load", "import yaml\nT = yaml.full_load('a: 1')\n", {2}),
    ("full-load-all", "import yaml\nT = list(yaml.full_load_all('a: 1'))\n", {2}),
    ("module-alias", "import yaml as y\n\ndef run(x):\n    return y.unsafe_load('a: 1')\n", {4}),
    ("from-import-unsafe-load", "from yaml import unsafe_load\n\nT = unsafe_load('a: 1')\n", {1, 3}),
    ("from-import-renamed", "from yaml import unsafe_load as parse\n\nT = parse('a: 1')\n", {1, 3}),
    ("from-import-load-and-loader", "from yaml import load, Loader\n\nT = load('a: 1', Loader=Loader)\n", {1, 3}),
    ("load-loader", "import yaml\nT = yaml.load('a: 1', Loader=yaml.Loader)\n", {2}),
    ("load-unsafe-loader", "import yaml\nT = yaml.load('a: 1', Loader=yaml.UnsafeLoader)\n", {2}),
    ("load-full-loader", "import yaml\nT = yaml.load('a: 1', Loader=yaml.FullLoader)\n", {2}),
    ("load-c-loaders", "import yaml\nA = yaml.load('a: 1', yaml.CLoader)\nB = yaml.load('a: 1', Loader=yaml.CUnsafeLoader)\n"
                       "C = yaml.load('a: 1', Loader=yaml.CFullLoader)\n", {2, 3, 4}),
    ("load-all-unsafe-positional", "import yaml\nT = list(yaml.load_all('a: 1', yaml.UnsafeLoader))\n", {2}),
    ("load-loader-of-submodule", "from yaml.loader import UnsafeLoader\nimport yaml\n\nT = yaml.load('a: 1', UnsafeLoader)\n", {1, 4}),
    ("load-loader-by-getattr", "import yaml\nT = yaml.load('a: 1', Loader=getattr(yaml, 'Unsafe' + 'Loader'))\n", {2}),
    ("load-through-importlib", "import importlib\nT = importlib.import_module('yaml').unsafe_load('a: 1')\n", {2}),
    ("load-loader-variable", "import yaml\nL = pick_loader()\nT = yaml.load('a: 1', Loader=L)\n", {3}),
    ("load-loader-parameter", "import yaml\n\ndef read(text, loader=yaml.SafeLoader):\n    return yaml.load(text, Loader=loader)\n", {4}),
    ("load-loader-rebound-in-loop", "import yaml\nL = yaml.SafeLoader\nfor L in loaders():\n    pass\nT = yaml.load('a: 1', Loader=L)\n", {5}),
    ("load-all-loader-variable", "import yaml\n\ndef read(text, loader):\n    return list(yaml.load_all(text, loader))\n", {4}),
    ("load-without-loader", "import yaml\nT = yaml.load('a: 1')\n", {2}),
    ("load-loader-in-kwargs", "import yaml\nOPTIONS = {}\nT = yaml.load('a: 1', **OPTIONS)\n", {3}),
    ("load-star-import", "from yaml import *\nT = load('a: 1', Loader=Loader)\n", {2}),
    ("load-class-with-unsafe-base", "import yaml\n\nclass L(yaml.SafeLoader, yaml.constructor.UnsafeConstructor):\n    pass\n\n"
                                    "T = yaml.load('a: 1', Loader=L)\n", {3, 6}),
    ("safe-loader-given-unsafe-constructors", "import yaml\nyaml.add_multi_constructor('tag:yaml.org,2002:python/object/apply:',\n"
                                              "    yaml.constructor.FullConstructor.construct_python_object_apply, Loader=yaml.SafeLoader)\n", {3}),
]


@pytest.mark.parametrize("source, lines", [pytest.param(source, lines, id=name) for name, source, lines in YAML_LOADS])
def test_yaml_loader_that_runs_code_is_rejected_on_its_lines(source: str, lines: set[int]):
    findings = analyze_python(source, "main.py")
    assert {f.line for f in findings if f.rule == "PY-DECODE"} == lines, findings
    assert all(f.severity == "reject" and f.path == "main.py" for f in findings if f.rule == "PY-DECODE")


def test_yaml_loader_computed_by_name_is_dynamic():
    findings = analyze_python("import yaml\n\ndef read(text, how):\n    return getattr(yaml, how)(text)\n", "main.py")
    assert ("PY-DYNAMIC", 4) in rules_at(findings) and rejects(findings)


YAML_SAFE_LOADS: list[tuple[str, str]] = [
    ("safe-load", "import yaml\nT = yaml.safe_load('a: 1')\nU = list(yaml.safe_load_all('a: 1'))\n"),
    ("load-safe-loader", "import yaml\nT = yaml.load('a: 1', Loader=yaml.SafeLoader)\n"),
    ("load-csafe-loader-positional", "import yaml\nT = yaml.load('a: 1', yaml.CSafeLoader)\n"),
    ("load-base-loader", "import yaml\nT = yaml.load('a: 1', Loader=yaml.BaseLoader)\nU = yaml.load('a: 1', Loader=yaml.CBaseLoader)\n"),
    ("load-all-safe", "import yaml as y\nT = list(y.load_all('a: 1', Loader=y.SafeLoader))\n"),
    ("from-import-safe", "from yaml import load, SafeLoader\nT = load('a: 1', Loader=SafeLoader)\n"),
    ("submodule-safe", "import yaml\nimport yaml.loader\nT = yaml.load('a: 1', Loader=yaml.loader.SafeLoader)\n"),
    ("c-loader-if-present", "import yaml\nL = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)\nT = yaml.load('a: 1', Loader=L)\n"),
    ("c-loader-conditional", "import yaml\nL = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader\nT = yaml.load('a: 1', Loader=L)\n"),
    ("c-loader-try-import", "import yaml\ntry:\n    from yaml import CSafeLoader as Safe\nexcept ImportError:\n"
                            "    from yaml import SafeLoader as Safe\n\nT = yaml.load('a: 1', Loader=Safe)\n"),
    ("loader-in-a-function", "import yaml\n\ndef read(text):\n    loader = yaml.CSafeLoader\n    return yaml.load(text, Loader=loader)\n"),
    ("own-subclass-of-safe-loader", "import yaml\n\nclass Tuning(yaml.SafeLoader):\n    pass\n\n"
                                    "Tuning.add_constructor('!block', lambda loader, node: int(loader.construct_scalar(node)))\n"
                                    "T = yaml.load('a: !block 1', Loader=Tuning)\n"),
    ("star-import-safe", "from yaml import *\nT = load('a: 1', Loader=SafeLoader)\n"),
    ("dump", "import yaml\nS = yaml.safe_dump({'a': 1})\nD = yaml.dump({'a': 1})\n"),
    ("other-loads", "import json, torch\nimport numpy as np\nA = json.load(open('t.json'))\nB = np.load('w.npy')\n"),
]


@pytest.mark.parametrize("source", [pytest.param(source, id=name) for name, source in YAML_SAFE_LOADS])
def test_yaml_safe_loader_is_allowed(source: str):
    findings = analyze_python(source, "main.py")
    assert "PY-DECODE" not in {f.rule for f in findings}, findings
    assert not rejects(findings), findings


YAML_DATA_FILES: list[tuple[str, str, set[int]]] = [
    ("object-apply", "block: 256\nwarm: !!python/object/apply:os.system ['true']\n", {2}),
    ("object-new", "o: !!python/object/new:collections.OrderedDict [[[a, 1]]]\n", {1}),
    ("object-state", "o: !!python/object:argparse.Namespace {a: 1}\n", {1}),
    ("name", "timer: !!python/name:time.perf_counter\n", {1}),
    ("module", "m: !!python/module:time\n", {1}),
    ("apply", "x: !!python/apply:os.system [true]\n", {1}),
    ("nested", "a: 1\nw: !!python/object/apply:builtins.setattr\n  - !!python/module:time\n  - perf_counter\n  - 0\n", {2, 3}),
    ("verbatim", "x: !<tag:yaml.org,2002:python/object/apply:os.system> [true]\n", {1}),
    ("percent-escaped", "x: !!pyth%6Fn/object/apply:os.system [true]\n", {1}),
    ("named-handle", "%TAG !p! tag:yaml.org,2002:\n---\nx: !p!python/object/apply:os.system [true]\n", {3}),
    ("handle-splitting-the-tag", "%TAG !p! tag:yaml.org,2002:pyt\n---\nx: !p!hon/object/apply:os.system [true]\n", {1, 3}),
    ("handle-to-the-python-tags", "%TAG !p! tag:yaml.org,2002:python/object/\n---\nx: !p!apply:os.system [true]\n", {1, 3}),
    ("before-a-syntax-error", "--- !!python/object/apply:os.system [true]\n--- [\n", {1}),
    ("in-a-json-named-file", '{"chunk": !!python/name:time.perf_counter }\n', {1}),
]


@pytest.mark.parametrize("path, content, lines", [
    pytest.param("tuning.json" if name.startswith("in-a-json") else "tuning.yaml", content, lines, id=name)
    for name, content, lines in YAML_DATA_FILES
])
def test_python_tags_in_a_yaml_data_file_are_rejected_on_their_lines(path: str, content: str, lines: set[int]):
    solution = make_solution(["pytorch"], "main.py::run", {"main.py": "def run(x):\n    return x\n", path: content})
    findings = analyze_solution(solution)
    assert {(f.path, f.line) for f in findings} == {(path, line) for line in lines}, findings
    assert all(f.rule == "PY-DECODE" and f.severity == "reject" for f in findings), findings


YAML_SAFE_DATA_FILES: list[tuple[str, str, str]] = [
    ("plain", "tuning.yaml", "# block sizes\nblock: 256\nchunks: 4\nshapes: [[1, 2], [3, 4]]\n"),
    ("standard-tags", "tuning.yml", "n: !!int '5'\ns: !!str 5\nb: !!binary aGVsbG8=\nm: !!map {a: 1}\n"),
    ("value-python-tags", "tuning.yaml", "shape: !!python/tuple [1, 2]\nname: !!python/str x\n"),
    ("local-tag", "tuning.yaml", "x: !python/object/apply:os.system [true]\n"),
    ("handle-elsewhere", "tuning.yaml", "%TAG !e! tag:example.com,2000:app/\n---\nx: !e!python [1]\n"),
    ("json", "tuning.json", '{"chunk": 512, "split_above": 600}'),
    ("csv-that-parses-as-python", "table.csv", "1, 2, 3\n4, 5, 6\n"),
    ("key-value-that-parses-as-python", "tuning.txt", "block: 256\nchunks: (4)\n"),
    ("notes", "NOTES.md", "# Notes\nFast! Very fast!\n![plot](plot.png)\nRead with yaml.safe_load, never yaml.unsafe_load.\n"),
]


@pytest.mark.parametrize("path, content", [pytest.param(path, content, id=name) for name, path, content in YAML_SAFE_DATA_FILES])
def test_plain_data_files_are_silent(path: str, content: str):
    solution = make_solution(["pytorch"], "main.py::run", {"main.py": "def run(x):\n    return x\n", path: content})
    assert analyze_solution(solution) == []


@pytest.mark.parametrize("path", ["notes.txt", "kernels.data", "README"])
def test_python_in_a_file_of_another_name_is_judged_as_python(path: str):
    """importlib's SourceFileLoader and spec_from_file_location load a module from a file of any name: such a file
    escaped every Python rule."""
    main = ('import importlib.util, os\n_SPEC = importlib.util.spec_from_file_location("helper", os.path.join(os.path.dirname(__file__), '
            f'{path!r}))\nhelper = importlib.util.module_from_spec(_SPEC)\n_SPEC.loader.exec_module(helper)\n\ndef run(x):\n    return x\n')
    solution = make_solution(["pytorch"], "main.py::run", {"main.py": main, path: "import gc\n\nobjects = gc.get_objects()\n"})
    assert ("PY-INTROSPECT", path, 3) in {(f.rule, f.path, f.line) for f in rejects(analyze_solution(solution))}


BUILD_FLAGS: list[tuple[str, str, bool]] = [
    ("macro-body", 'extra_cflags=["-O3", "-DFRAME=PyEval_GetFrame"]', True),
    ("macro-body-split", 'extra_cflags=["-D", "X=1", "-DCALL=system"]', True),
    ("forced-include", 'extra_cflags=["-include", "notes.txt"]', True),
    ("language-switch", 'extra_cuda_cflags=["-x", "cu"]', True),
    ("host-compiler", 'extra_cuda_cflags=["-ccbin", "./cc"]', True),
    ("compiler-plugin", 'extra_cflags=["-fplugin=./p.so"]', True),
    ("link-wrap", 'extra_ldflags=["-Wl,--wrap=cudaLaunchKernel"]', True),
    ("computed", 'extra_cflags=[os.environ.get("X", "-O3")]', True),
    ("computed-list", 'extra_cflags=flags()', True),
    ("plain", 'extra_cflags=["-O3", "-DNDEBUG", "-std=c++17"], extra_ldflags=["-lcublas"]', False),
    ("numeric-macro", 'extra_cflags=[f"-DTILE={TILE}", f"-DNAME={NAME}"]', False),
    ("named-list", 'extra_cuda_cflags=FLAGS', False),
]


@pytest.mark.parametrize("flags, refused", [pytest.param(flags, refused, id=name) for name, flags, refused in BUILD_FLAGS])
def test_build_flags_that_bring_code_into_the_build_are_refused(flags: str, refused: bool):
    source = ('import os\nfrom torch.utils.cpp_extension import load_inline\nTILE = 128\nNAME = "scale"\n'
              'FLAGS = ["-O3", "--use_fast_math", "-Xcompiler", "-fPIC"]\n\ndef flags():\n    return ["-O3"]\n\n'
              f'_ext = load_inline(name="k", cpp_sources="void f() {{}}", functions=["f"], {flags})\n')
    rules = {f.rule for f in rejects(analyze_python(source, "main.py"))}
    assert ("PY-BUILD-FLAGS" in rules) is refused, rules


def test_a_solution_file_named_yaml_does_not_hide_the_library():
    solution = make_solution(["pytorch"], "main.py::run", {
        "main.py": "import yaml\nT = yaml.load('a: 1', Loader=yaml.Loader)\nU = yaml.load('a: 1', Loader=yaml.SafeLoader)\n\ndef run(x):\n    return x\n",
        "yaml.py": "Loader = SafeLoader = None\n\ndef load(text, Loader):\n    return text\n",
    })
    assert [(f.path, f.line, f.rule) for f in analyze_solution(solution)] == [("main.py", 2, "PY-DECODE"), ("yaml.py", 1, "PY-SHADOW")]


def test_a_yaml_table_read_safely_is_silent_and_read_unsafely_is_rejected_on_both_files():
    table = "block: 256\nchunks: 4\n"
    code = ("import os\nimport yaml\n\nwith open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'tuning.yaml')) as f:\n"
            "    T = yaml.{how}(f)\n\n\ndef run(x):\n    return x * T['block']\n")
    safe = make_solution(["pytorch"], "main.py::run", {"main.py": code.format(how="safe_load"), "tuning.yaml": table})
    assert analyze_solution(safe) == []
    hostile = table + "warm: !!python/object/apply:builtins.setattr [!!python/module:time, perf_counter, 0]\n"
    unsafe = make_solution(["pytorch"], "main.py::run", {"main.py": code.format(how="unsafe_load"), "tuning.yaml": hostile})
    assert [(f.path, f.line, f.rule) for f in analyze_solution(unsafe)] == [("main.py", 5, "PY-DECODE"), ("tuning.yaml", 3, "PY-DECODE")]


# --- C / C++ / CUDA attacks ----------------------------------------------------------------------------

CPP_ATTACKS: list[tuple[str, str, str]] = [
    ("asm-non-ptx", "CPP-ASM", 'void f() {\n  __asm__ __volatile__("rdtsc");  // HERE\n}\n'),
    ("asm-timer", "CPP-ASM", '__device__ unsigned long long t() {\n  unsigned long long x;\n  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(x));  // HERE\n  return x;\n}\n'),
    ("asm-mma", "CPP-ASM", '__device__ void m(float* d, const unsigned* a, const unsigned* b) {\n  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"  // HERE\n    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));\n}\n'),
    ("syscall-call", "CPP-SYSCALL", "#include <sys/syscall.h>\nlong f() { return syscall(SYS_getpid); }  // HERE\n"),
    ("syscall-asm", "CPP-SYSCALL", 'void f() {\n  asm volatile("mov $60, %%rax\\n\\tsyscall" ::: "rax");  // HERE\n}\n'),
    ("proc-system", "CPP-PROC", 'int f() {\n  return system("nvidia-smi");  // HERE\n}\n'),
    ("proc-std-system", "CPP-PROC", '#include <cstdlib>\nint f() { return std::system("ls"); }  // HERE\n'),
    ("proc-popen", "CPP-PROC", 'void f() {\n  FILE* p = popen("ls", "r");  // HERE\n}\n'),
    ("proc-fork", "CPP-PROC", "void f() {\n  if (fork() == 0) { }  // HERE\n}\n"),
    ("proc-token-paste", "CPP-PROC", '#define RUN(x) sy##stem(x)  // HERE\nvoid f() { RUN("id"); }\n'),
    ("reach-token-paste-chain", "CPP-INTROSPECT", "#define GET P ## y ## Eval_GetFrame  // HERE\nvoid f() { auto* fr = GET(); }\n"),
    ("reach-macro-arguments-pasted", "CPP-INTROSPECT", "#define CAT(a, b) a##b\nvoid f() {\n  auto* fr = CAT(PyEval_Get, Frame)();  // HERE\n}\n"),
    ("proc-macro-arguments-pasted", "CPP-PROC", '#define CALL(a, b, x) a ## b(x)\nvoid f() {\n  CALL(sys, tem, "id");  // HERE\n}\n'),
    ("proc-macro-alias", "CPP-PROC", '#define SHELL system  // HERE\nvoid f() { SHELL("id"); }\n'),
    ("proc-function-pointer", "CPP-PROC", "int (*run_fn)(const char*) = &system;  // HERE\n"),
    ("proc-execvp", "CPP-PROC", "void f(char** argv) {\n  execvp(argv[0], argv);  // HERE\n}\n"),
    ("dlopen", "CPP-DLOPEN", '#include <dlfcn.h>\nvoid* h = dlopen("libcuda.so.1", RTLD_NOW);  // HERE\n'),
    ("dlsym", "CPP-DLOPEN", 'void* f(void* h) {\n  return dlsym(h, "cuLaunchKernel");  // HERE\n}\n'),
    ("net-socket", "CPP-NET", "int f() {\n  return socket(AF_INET, SOCK_STREAM, 0);  // HERE\n}\n"),
    ("net-connect", "CPP-NET", "int f(int fd, const sockaddr* a) {\n  return connect(fd, a, 16);  // HERE\n}\n"),
    ("net-header", "CPP-NET", "#include <sys/socket.h>  // HERE\n"),
    ("thread-std", "CPP-THREAD", "#include <thread>\nvoid f() {\n  std::thread t([] { });  // HERE\n  t.detach();\n}\n"),
    ("thread-async", "CPP-THREAD", "#include <future>\nvoid f() {\n  auto r = std::async(std::launch::async, [] { return 1; });  // HERE\n}\n"),
    ("thread-pthread", "CPP-THREAD", "void f(pthread_t* t) {\n  pthread_create(t, nullptr, nullptr, nullptr);  // HERE\n}\n"),
    ("thread-using-namespace", "CPP-THREAD", "using namespace std;\nvoid work();\nvoid f() {\n  thread worker(work);  // HERE\n  worker.detach();\n}\n"),
    ("signal-signal", "CPP-SIGNAL", "#include <csignal>\nvoid h(int);\nvoid f() { signal(SIGALRM, h); }  // HERE\n"),
    ("signal-alarm", "CPP-SIGNAL", "void f() {\n  alarm(1);  // HERE\n}\n"),
    ("signal-kill", "CPP-SIGNAL", "void f() {\n  kill(getppid(), SIGKILL);  // HERE\n}\n"),
    ("signal-sigaction", "CPP-SIGNAL", "void f() {\n  struct sigaction sa;  // HERE\n}\n"),
    ("exit-exit", "CPP-EXIT", "void f(int err) {\n  if (err) exit(1);  // HERE\n}\n"),
    ("ctor-attribute", "CPP-CTOR", "__attribute__((constructor)) static void init() { }  // HERE\n"),
    ("ctor-attribute-list", "CPP-CTOR", "__attribute__((used, destructor)) static void fini() { }  // HERE\n"),
    ("memo-static-map-iterator", "CPP-MEMO", "torch::Tensor rope(torch::Tensor x, double theta) {\n  static std::unordered_map<float, torch::Tensor> cache;\n"
     "  auto it = cache.find((float)theta);\n  if (it != cache.end()) {\n    return it->second;  // HERE\n  }\n  return cache[(float)theta] = x * theta;\n}\n"),
    ("memo-static-map-subscript", "CPP-MEMO", "at::Tensor f(at::Tensor x, int64_t n) {\n  static std::map<int64_t, at::Tensor> memo;\n"
     "  if (!memo.count(n)) memo[n] = x.cumsum(0);\n  return memo[n].clone();  // HERE\n}\n"),
    ("ctor-gnu", "CPP-CTOR", "[[gnu::constructor]] void init2() { }  // HERE\n"),
    ("ctor-atexit", "CPP-CTOR", "void cleanup();\nvoid f() {\n  atexit(cleanup);  // HERE\n}\n"),
    ("write-fopen", "CPP-FILE-WRITE", 'void f() {\n  FILE* o = fopen("out.bin", "wb");  // HERE\n}\n'),
    ("write-ofstream", "CPP-FILE-WRITE", '#include <fstream>\nvoid f() {\n  std::ofstream o("log.txt");  // HERE\n}\n'),
    ("write-open-flags", "CPP-FILE-WRITE", 'void f() {\n  int fd = open("x", O_WRONLY | O_CREAT, 0644);  // HERE\n}\n'),
    ("write-unlink", "CPP-FILE-WRITE", 'void f() {\n  unlink("x");  // HERE\n}\n'),
    ("write-filesystem", "CPP-FILE-WRITE", '#include <filesystem>\nvoid f() {\n  std::filesystem::remove_all("build");  // HERE\n}\n'),
    ("read-fopen", "CPP-FILE-READ", 'void f() {\n  FILE* i = fopen("table.bin", "rb");  // HERE\n}\n'),
    ("read-ifstream", "CPP-FILE-READ", '#include <fstream>\nvoid f() {\n  std::ifstream in("table.txt");  // HERE\n}\n'),
    ("escape-proc", "CPP-PATH-ESCAPE", 'void f() {\n  FILE* m = fopen("/proc/self/maps", "r");  // HERE\n}\n'),
    ("escape-dotdot-stream", "CPP-PATH-ESCAPE", '#include <fstream>\nvoid f() {\n  std::ifstream in("../reference.py");  // HERE\n}\n'),
    ("escape-include-absolute", "CPP-PATH-ESCAPE", '#include "/etc/passwd"  // HERE\n'),
    ("escape-include-dotdot", "CPP-PATH-ESCAPE", '#include "../../harness/secret.h"  // HERE\n'),
    ("escape-literal", "CPP-PATH-ESCAPE", 'const char* kPath = "/proc/self/environ";  // HERE\n'),
    ("env-setenv", "CPP-ENV", 'void f() {\n  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);  // HERE\n}\n'),
    ("env-putenv", "CPP-ENV", 'void f(char* s) {\n  putenv(s);  // HERE\n}\n'),
    ("env-getenv", "CPP-ENV-READ", 'const char* f() {\n  return std::getenv("HOME");  // HERE\n}\n'),
    ("l2-window", "CPP-L2", "void f(cudaStream_t s, void* p) {\n  cudaStreamAttrValue v;\n  v.accessPolicyWindow.base_ptr = p;  // HERE\n}\n"),
    ("l2-limit", "CPP-L2", "void f() {\n  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 4 << 20);  // HERE\n}\n"),
    ("l2-reset", "CPP-L2", "void f() {\n  cudaCtxResetPersistingL2Cache();  // HERE\n}\n"),
    ("l2-stream-attribute", "CPP-L2", "void f(cudaStream_t s, cudaStreamAttrValue* v) {\n  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, v);  // HERE\n}\n"),
    ("precision-tf32", "CPP-PRECISION", "#include <ATen/Context.h>\nvoid f() {\n  at::globalContext().setAllowTF32CuBLAS(true);  // HERE\n}\n"),
    ("blob-elf-hex-array", "CPP-BLOB", "static const unsigned char kImage[] = {\n  0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00,  // HERE\n};\n"),
    ("blob-elf-decimal-array", "CPP-BLOB", "unsigned char image[] = {127, 69, 76, 70, 2, 1, 1};  // HERE\n"),
    ("blob-elf-char-array", "CPP-BLOB", "const char image[] = {'\\x7f', 'E', 'L', 'F', 2};  // HERE\n"),
    ("blob-fatbin-array", "CPP-BLOB", "unsigned char fb[] = {0x50, 0xed, 0x55, 0xba, 0x01, 0x00};  // HERE\n"),
    ("blob-fatbin-word", "CPP-BLOB", "const unsigned int fatbin[] = {0xba55ed50, 0x00100001};  // HERE\n"),
    ("blob-elf-string", "CPP-BLOB", 'const char* image = "\\x7f" "ELF\\x02\\x01";  // HERE\n'),
    ("blob-elf-octal-string", "CPP-BLOB", 'const char* image = "\\177ELF";  // HERE\n'),
    ("blob-elf-base64-string", "CPP-BLOB", f'const char* image = "{ELF_B64}";  // HERE\n'),
    ("blob-incbin", "CPP-BLOB", 'asm(".section .rodata\\n.incbin \\"kernel.cubin\\"");  // HERE\n'),
    ("modload-data", "CPP-MODLOAD", "void f(CUmodule* m, const void* image) {\n  cuModuleLoadData(m, image);  // HERE\n}\n"),
    ("modload-fatbin", "CPP-MODLOAD", "void f(CUmodule* m, const void* image) {\n  cuModuleLoadFatBinary(m, image);  // HERE\n}\n"),
    ("modload-by-name", "CPP-MODLOAD", 'void* f() {\n  void* fn = nullptr;\n  cuGetProcAddress("cuModuleLoadData", &fn, 12000, 0, nullptr);  // HERE\n  return fn;\n}\n'),
    ("modload-library", "CPP-MODLOAD", "void f(CUlibrary* l, const void* image) {\n  cuLibraryLoadData(l, image, 0, 0, 0, 0, 0, 0);  // HERE\n}\n"),
    ("cache-static-map", "CPP-CACHE", "#include <unordered_map>\ntorch::Tensor f(torch::Tensor x) {\n  static std::unordered_map<const void*, torch::Tensor> cache;  // HERE\n  return x;\n}\n"),
    ("cache-global-map", "CPP-CACHE", "#include <map>\nnamespace {\nstd::map<uintptr_t, at::Tensor> results;  // HERE\n}\n"),
    ("cache-static-pointer", "CPP-CACHE", "static const void* last = nullptr;\nbool same(const void* p) {\n  return p == last;  // HERE\n}\n"),
    ("ptr-key-subscript", "CPP-PTR-KEY", "torch::Tensor f(torch::Tensor x, std::map<void*, torch::Tensor>& m) {\n  return m[x.data_ptr()];  // HERE\n}\n"),
    ("ptr-key-find", "CPP-PTR-KEY", "bool f(torch::Tensor x, std::map<void*, int>& m) {\n  return m.find(x.data_ptr()) != m.end();  // HERE\n}\n"),
    ("ptr-key-compare", "CPP-PTR-KEY", "bool f(torch::Tensor a, torch::Tensor b) {\n  return a.data_ptr() == b.data_ptr();  // HERE\n}\n"),
    ("profiler-cupti", "CPP-PROFILER", "void f() {\n  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);  // HERE\n}\n"),
    ("profiler-header", "CPP-PROFILER", "#include <cupti.h>  // HERE\n"),
    ("profiler-stop", "CPP-PROFILER", "void f() {\n  cudaProfilerStop();  // HERE\n}\n"),
    ("device-nvml", "CPP-DEVICE", "void f(nvmlDevice_t d) {\n  nvmlDeviceSetGpuLockedClocks(d, 1980, 1980);  // HERE\n}\n"),
    ("python-pyrun", "CPP-PYTHON", 'void f() {\n  PyRun_SimpleString("import os");  // HERE\n}\n'),
    ("python-pybind-exec", "CPP-PYTHON", 'void f() {\n  py::exec("import os");  // HERE\n}\n'),
    ("python-pybind-import", "CPP-PYTHON", 'void f() {\n  auto sp = py::module_::import("subprocess");  // HERE\n}\n'),
    # the Python C API and pybind11 reaching the harness's objects (the worker and its timer) from C++
    ("reach-frame", "CPP-INTROSPECT", "void f() {\n  PyFrameObject* frame = PyEval_GetFrame();  // HERE\n}\n"),
    ("reach-frame-back", "CPP-INTROSPECT", "PyFrameObject* f(PyFrameObject* frame) {\n  return PyFrame_GetBack(frame);  // HERE\n}\n"),
    ("reach-thread-state", "CPP-INTROSPECT", "void f() {\n  auto* frame = PyThreadState_GetFrame(PyThreadState_Get());  // HERE\n}\n"),
    ("reach-private-api", "CPP-INTROSPECT", "void f() {\n  auto* state = _PyThreadState_GET();  // HERE\n}\n"),
    ("reach-gc-visit", "CPP-INTROSPECT", "int visit(PyObject* o, void* arg);\nvoid f() {\n  PyUnstable_GC_VisitObjects(visit, nullptr);  // HERE\n}\n"),
    ("reach-sys-modules", "CPP-INTROSPECT", 'void f() {\n  PyObject* modules = PySys_GetObject("modules");  // HERE\n}\n'),
    ("reach-module-dict", "CPP-INTROSPECT", "void f(PyObject* m) {\n  PyObject* globals = PyModule_GetDict(m);  // HERE\n}\n"),
    ("reach-setattr-c", "CPP-INTROSPECT", "void f(PyObject* o, PyObject* name, PyObject* v) {\n  PyObject_SetAttr(o, name, v);  // HERE\n}\n"),
    ("reach-pybind-setattr", "CPP-INTROSPECT", 'void f(py::object timer, py::object fake) {\n  py::setattr(timer, "measure", fake);  // HERE\n}\n'),
    ("reach-attr-assignment", "CPP-INTROSPECT", 'void f(py::object timer, py::object fake) {\n  timer.attr("measure") = fake;  // HERE\n}\n'),
    ("reach-attr-computed", "CPP-INTROSPECT", 'void f(py::object o, std::string name) {\n  auto v = o.attr(name.c_str());  // HERE\n}\n'),
    ("reach-getattr-computed", "CPP-INTROSPECT", 'void f(py::object o, const char* name) {\n  auto v = py::getattr(o, name);  // HERE\n}\n'),
    ("reach-import-computed", "CPP-INTROSPECT", 'void f(std::string name) {\n  auto m = py::module_::import(name.c_str());  // HERE\n}\n'),
    ("reach-import-gc", "CPP-INTROSPECT", 'void f() {\n  auto gc = py::module_::import("gc");  // HERE\n}\n'),
    ("reach-import-sys-c", "CPP-INTROSPECT", 'void f() {\n  PyObject* sys = PyImport_ImportModule("sys");  // HERE\n}\n'),
    ("reach-frame-name", "CPP-INTROSPECT", 'py::object f(py::object tb) {\n  return tb.attr("tb_frame");  // HERE\n}\n'),
    ("reach-frame-name-split", "CPP-INTROSPECT", 'py::object f(py::object frame) {\n  return frame.attr("f_" "back");  // HERE\n}\n'),
    ("reach-dict-name", "CPP-INTROSPECT", 'py::object f(py::object o) {\n  return o.attr("__dict__");  // HERE\n}\n'),
    ("reach-module-name-outside-its-body", "CPP-INTROSPECT",
     'void patch(py::object m, py::object fake) {\n  m.attr("measure") = fake;  // HERE\n}\nPYBIND11_MODULE(ext, m) {\n  m.def("patch", &patch);\n}\n'),
    ("reach-globals", "CPP-INTROSPECT", "void f() {\n  auto g = py::globals();  // HERE\n}\n"),
    ("reach-frame-struct", "CPP-INTROSPECT", "PyObject* f(PyTracebackObject* tb) {\n  return (PyObject*)tb->tb_frame;  // HERE\n}\n"),
    ("reach-type-dict", "CPP-INTROSPECT", 'void f(PyObject* o, PyObject* fake) {\n  PyDict_SetItemString(Py_TYPE(o)->tp_dict, "measure", fake);  // HERE\n}\n'),
    ("reach-method-table", "CPP-INTROSPECT", "void f(PyCFunctionObject* clock, PyCFunction fake) {\n  clock->m_ml->ml_meth = fake;  // HERE\n}\n"),
    ("reach-traceback", "CPP-INTROSPECT", "void f(PyObject* e) {\n  PyObject* tb = PyException_GetTraceback(e);  // HERE\n}\n"),
]


@pytest.mark.parametrize("rule, source", [pytest.param(rule, source, id=name) for name, rule, source in CPP_ATTACKS])
def test_cpp_attack_is_reported_on_its_line(rule: str, source: str):
    findings = analyze_cpp(source, "kernel.cu")
    line = marked(source)
    assert (rule, line) in rules_at(findings), f"expected {rule} at line {line}, got {findings}"
    found = next(f for f in findings if f.rule == rule and f.line == line)
    assert found.severity == RULES[rule][0]
    assert found.path == "kernel.cu"


CPP_NEAR_MISSES: list[tuple[str, str, str]] = [
    ("memo-static-workspace-map", "CPP-MEMO", "torch::Tensor f(torch::Tensor x) {\n  static std::unordered_map<int64_t, torch::Tensor> workspaces;\n"
     "  auto& ws = workspaces[x.size(0)];\n  if (!ws.defined()) ws = torch::empty({1024}, x.options());\n  return x * 2;\n}\n"),
    ("asm-identifier", "CPP-ASM", "int asm_count = 0;\nvoid asm_helper();\n"),
    ("proc-system-lookalikes", "CPP-PROC", "__device__ void f(int* p) {\n  __threadfence_system();\n  atomicAdd_system(p, 1);\n  cuda::atomic<int, cuda::thread_scope_system> a;\n}\n"),
    ("proc-in-string-and-comment", "CPP-PROC", '// never call system("x") here\nvoid f(bool ok) { TORCH_CHECK(ok, "do not call system() or fork()"); }\n'),
    ("proc-member", "CPP-PROC", "void f(Obj& o) { o.system(1); o->fork(); }\n"),
    ("proc-lookalike-names", "CPP-PROC", "int system_count = 0;\nint f(int exit_code) { return system_count == exit_code; }\n#define NUM_SYSTEMS 4\n"),
    ("modload-tma-entry-point", "CPP-MODLOAD", 'void f(void** fn) {\n  cudaDriverEntryPointQueryResult q;\n  cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", fn, cudaEnableDefault, &q);\n}\n'),
    ("thread-lookalikes", "CPP-THREAD", "#include <thread>\n__global__ void k(int* out) {\n  int thread = threadIdx.x;\n  out[thread] = thread;\n}\nvoid f() { std::this_thread::yield(); }\n"),
    ("net-member-connect", "CPP-NET", "void f(Signal& s) { s.connect(1); }\n"),
    ("exit-lookalike", "CPP-EXIT", "void on_exit_hook();\nvoid f() { on_exit_hook(); }\n"),
    ("blob-near-magic", "CPP-BLOB", "unsigned char lut[] = {0x7f, 0x45, 0x4c, 0x47, 0x01};\nconst char* msg = \"ELF files are not accepted\";\n"),
    ("cache-string-key", "CPP-CACHE", "#include <unordered_map>\n#include <string>\nstatic std::unordered_map<std::string, int> plans;\nvoid f() {\n  std::unordered_map<const void*, int> local;\n}\n"),
    ("cache-workspace", "CPP-CACHE", "static float* workspace = nullptr;\nvoid f() {\n  if (workspace == nullptr) cudaMalloc(&workspace, 1024);\n  if (nullptr != workspace) {}\n}\n"),
    ("ptr-kernel-args", "CPP-PTR-KEY", "void f(torch::Tensor x) {\n  TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0);\n  TORCH_CHECK(x.data_ptr() != nullptr);\n  k<<<1, 32>>>(x.data_ptr<float>(), out[0]);\n}\n"),
    ("precision-false", "CPP-PRECISION", "void f() {\n  at::globalContext().setAllowTF32CuBLAS(false);\n}\n"),
    ("python-import-torch", "CPP-PYTHON", 'void f() {\n  auto torch = py::module_::import("torch");\n}\n'),
    ("reach-pybind-module-and-calls", "CPP-INTROSPECT",
     'torch::Tensor scale(torch::Tensor x, double a) { return x * a; }\n'
     'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n  m.def("scale", &scale, "x * a");\n  m.attr("__version__") = "1.0";\n'
     '  auto torch = py::module_::import("torch");\n  auto stack = torch.attr("stack");\n  py::gil_scoped_release release;\n}\n'),
    ("macro-pasting-harmless", "CPP-PROC", "#define CAT(a, b) a##b\n#define KERNEL(n) kernel_##n\nvoid KERNEL(fp16)();\nint CAT(block, _size) = 128;\n"),
    ("reach-lookalikes", "CPP-INTROSPECT",
     'struct Frame { int back; };\nint f(Frame* frame, bool ok) {\n  TORCH_CHECK(ok, "f_back is not a kernel argument");\n  return frame->back == 0;\n}\n'),
    ("file-filesystem-lookalike", "CPP-FILE-WRITE", "void f(fs_state& fs) { remove_all(fs); }\n"),
    ("stream-create", "CPP-THREAD", "void f() {\n  cudaStream_t s;\n  cudaStreamCreate(&s);\n  cudaStreamDestroy(s);\n}\n"),
]


@pytest.mark.parametrize("rule, source", [pytest.param(rule, source, id=name) for name, rule, source in CPP_NEAR_MISSES])
def test_cpp_near_miss_stays_silent(rule: str, source: str):
    findings = analyze_cpp(source, "near.cu")
    assert rule not in {f.rule for f in findings}, findings
    assert not rejects(findings), findings


def _closing_by_scan(bare: str, open_at: int, limit: int) -> int:
    """What _Source.closing answers, read the slow way: scan forward counting depth."""
    depth = 0
    for index in range(open_at, min(len(bare), open_at + limit)):
        ch = bare[index]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return index
        elif ch == ";" and depth <= 1:
            return -1
    return -1


def test_the_parentheses_matched_in_one_pass_close_where_a_scan_finds_them():
    import random

    from solbench.bench.guards._cpp import _Source

    draw = random.Random(7)
    checked = 0
    for _ in range(1500):
        source = _Source("".join(draw.choice("(();a, \n") for _ in range(draw.randint(1, 60))))
        for index, ch in enumerate(source.bare):
            if ch == "(":
                for limit in (4, 16, 20000):
                    assert source.closing(index, limit) == _closing_by_scan(source.bare, index, limit), (source.bare, index, limit)
                    checked += 1
    assert checked > 10000


def test_a_file_of_calls_nested_a_hundred_thousand_deep_is_refused_not_read_for_ever():
    """Each call's arguments read whole made such a file quadratic (minutes to hours); now reading stops
    at a limit and the file is refused as unanalysable."""
    source = "fopen(" * 100_000 + ")" * 100_000
    assert "ANALYZER-LIMIT" in {f.rule for f in rejects(analyze_cpp(source, "deep.cpp"))}


def test_cpp_opaque_long_initializer_warns():
    source = "const unsigned char table[] = {" + ", ".join(str(i % 256) for i in range(5000)) + "};\n"
    findings = analyze_cpp(source, "table.cu")
    assert ("CPP-OPAQUE", 1) in rules_at(findings)
    assert not rejects(findings)


# --- legitimate solutions: no reject finding ------------------------------------------------------------

LEGIT: dict[str, tuple[list[str], str, dict[str, str]]] = {}

LEGIT["triton_matmul_autotune"] = (["triton"], "kernel.py::run", {"kernel.py": src('''
    import functools
    import math
    from typing import Optional

    import torch
    import triton
    import triton.language as tl

    BLOCK_M = 128


    @triton.autotune(
        configs=[triton.Config({"BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
                 triton.Config({"BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=4)],
        key=["M", "N", "K"],
    )
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + (offs_k[None, :] + k * BLOCK_K) * stride_ak)
            b = tl.load(b_ptr + (offs_k[:, None] + k * BLOCK_K) * stride_bk + offs_n[None, :] * stride_bn)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(tl.bfloat16))


    @functools.lru_cache(maxsize=None)
    def grid_for(M: int, N: int, block_n: int):
        return (triton.cdiv(M, BLOCK_M), triton.cdiv(N, block_n))


    def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
        M, K = a.shape
        _, N = b.shape
        assert a.data_ptr() % 16 == 0
        grid = lambda meta: (triton.cdiv(M, BLOCK_M), triton.cdiv(N, meta["BLOCK_N"]))
        matmul_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
''')})

LEGIT["torch_library_calls"] = (["pytorch"], "main.py::run", {"main.py": src('''
    import torch
    import torch.nn.functional as F


    def run(q, k, v, w1, w2):
        h = torch.mm(q.flatten(0, 1), w1)
        h = F.silu(h) * torch.sigmoid(h)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.backends.cuda.enable_flash_sdp(True)
        return o, torch.addmm(h, h, w2, beta=0.5), torch.add(h, h, alpha=2.0)
''')})

LEGIT["torch_compile_with_config"] = (["pytorch"], "main.py::run", {"main.py": src('''
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    torch._dynamo.config.cache_size_limit = 64
    inductor_config.coordinate_descent_tuning = True
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False


    @torch.compile(mode="max-autotune-no-cudagraphs", fullgraph=True)
    def fused(x, weight, eps: float = 1e-6):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight


    def run(x, weight):
        return fused(x, weight)
''')})

LEGIT["cuda_cpp_own_pybind"] = (["cuda_cpp"], "kernel.cu::rmsnorm", {"kernel.cu": src(r'''
    #include <torch/extension.h>
    #include <cuda_runtime.h>
    #include <cuda_fp16.h>
    #include <c10/cuda/CUDAStream.h>
    #include <vector>

    // A static workspace, allocated once: not keyed on the inputs.
    static float* g_workspace = nullptr;

    template <int BLOCK>
    __global__ void rmsnorm_kernel(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ out,
                                   int rows, int cols, float eps) {
      __shared__ float partial[BLOCK / 32];
      int row = blockIdx.x;
      float acc = 0.f;
      for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = __half2float(x[row * cols + c]);
        acc += v * v;
      }
      for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, offset);
      if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
      __syncthreads();
      if (threadIdx.x == 0) {
        float total = 0.f;
        for (int i = 0; i < BLOCK / 32; ++i) total += partial[i];
        partial[0] = rsqrtf(total / cols + eps);
      }
      __syncthreads();
      float scale = partial[0];
      for (int c = threadIdx.x; c < cols; c += BLOCK)
        out[row * cols + c] = __float2half(__half2float(x[row * cols + c]) * scale * __half2float(w[c]));
    }

    #define CUDA_CHECK(expr) do { cudaError_t err = (expr); if (err != cudaSuccess) { \
        TORCH_CHECK(false, "CUDA error: ", cudaGetErrorString(err)); } } while (0)

    torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps) {
      TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
      TORCH_CHECK(x.data_ptr() != nullptr, "x is empty");
      auto out = torch::empty_like(x);
      int rows = x.size(0), cols = x.size(1);
      if (g_workspace == nullptr) CUDA_CHECK(cudaMalloc(&g_workspace, 1024));
      auto stream = at::cuda::getCurrentCUDAStream();
      rmsnorm_kernel<256><<<rows, 256, 0, stream>>>(
          reinterpret_cast<const __half*>(x.data_ptr<at::Half>()), reinterpret_cast<const __half*>(w.data_ptr<at::Half>()),
          reinterpret_cast<__half*>(out.data_ptr<at::Half>()), rows, cols, (float)eps);
      CUDA_CHECK(cudaGetLastError());
      return out;
    }

    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
      m.def("rmsnorm", &rmsnorm, "RMSNorm (CUDA)");
    }
''')})

LEGIT["load_inline"] = (["pytorch"], "main.py::run", {"main.py": src('''
    import torch
    from torch.utils.cpp_extension import load_inline

    CUDA_SRC = r"""
    #include <torch/extension.h>
    #include <cuda_runtime.h>

    __global__ void silu_mul_kernel(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out, int64_t n) {
        int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        if (i < n) {
            float g = gate[i];
            out[i] = g / (1.0f + __expf(-g)) * up[i];
        }
    }

    void silu_mul(torch::Tensor gate, torch::Tensor up, torch::Tensor out) {
        TORCH_CHECK(gate.is_cuda(), "inputs must be on the GPU; never exit() here");
        int64_t n = out.numel();
        int threads = 256;
        int blocks = (int)((n + threads - 1) / threads);
        silu_mul_kernel<<<blocks, threads>>>(gate.data_ptr<float>(), up.data_ptr<float>(), out.data_ptr<float>(), n);
    }
    """

    CPP_SRC = "void silu_mul(torch::Tensor gate, torch::Tensor up, torch::Tensor out);"

    _module = None


    def _ext():
        global _module
        if _module is None:
            _module = load_inline(name="silu_mul_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["silu_mul"],
                                  extra_cuda_cflags=["-O3", "--use_fast_math"], extra_include_paths=["/usr/local/cuda/include"],
                                  build_directory=None, verbose=False)
        return _module


    def run(gate, up, out):
        _ext().silu_mul(gate, up, out)
''')})

LEGIT["side_stream_joined"] = (["pytorch"], "main.py::run", {"main.py": src('''
    import torch

    _side = None


    def run(x, w1, w2, out1, out2):
        global _side
        if _side is None:
            _side = torch.cuda.Stream()
        main = torch.cuda.current_stream()
        _side.wait_stream(main)
        with torch.cuda.stream(_side):
            torch.mm(x, w2, out=out2)
        torch.mm(x, w1, out=out1)
        main.wait_stream(_side)
        _side.synchronize()
        torch.cuda.synchronize()
''')})

LEGIT["triton_two_kernels"] = (["triton"], "softmax.py::run", {"softmax.py": src('''
    import itertools
    from dataclasses import dataclass

    import torch
    import triton
    import triton.language as tl


    @dataclass(frozen=True)
    class Cfg:
        block: int
        warps: int


    CONFIGS = {n: Cfg(block=triton.next_power_of_2(n), warps=4 if n <= 2048 else 8) for n in (512, 1024, 2048, 4096)}


    @triton.jit
    def row_max(x_ptr, m_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
        tl.store(m_ptr + row, tl.max(x, axis=0))


    @triton.jit
    def softmax_kernel(x_ptr, m_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
        m = tl.load(m_ptr + row)
        e = tl.exp(x - m)
        tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


    def run(x, y):
        rows, cols = x.shape
        cfg = CONFIGS.get(cols) or Cfg(block=triton.next_power_of_2(cols), warps=8)
        m = torch.empty(rows, device=x.device, dtype=torch.float32)
        row_max[(rows,)](x, m, cols, BLOCK=cfg.block, num_warps=cfg.warps)
        softmax_kernel[(rows,)](x, m, y, cols, BLOCK=cfg.block, num_warps=cfg.warps)
        for _ in itertools.repeat(None, 0):
            pass
''')})

LEGIT["reads_own_sources"] = (["pytorch"], "main.py::run", {
    "main.py": src('''
        import os
        from pathlib import Path

        import torch
        from torch.utils.cpp_extension import load_inline

        HERE = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(HERE, "csrc", "kernel.cu")) as f:
            CUDA = f.read()
        HEADER = (Path(__file__).parent / "csrc" / "kernel.h").read_text()
        EXTRA = open("csrc/kernel.h").read()
        _ext = load_inline(name="own_sources", cpp_sources=HEADER, cuda_sources=CUDA, functions=["scale"])


        def run(x):
            return _ext.scale(x)
    '''),
    "csrc/kernel.cu": src('''
        #include <torch/extension.h>
        #include "kernel.h"
        __global__ void scale_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.f; }
        torch::Tensor scale(torch::Tensor x) { auto y = x.clone(); scale_kernel<<<(y.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), y.numel()); return y; }
    '''),
    "csrc/kernel.h": "#pragma once\n#include <torch/extension.h>\ntorch::Tensor scale(torch::Tensor x);\n",
})

LEGIT["ptx_mma_ldmatrix_cp_async"] = (["cuda_cpp"], "gemm.cu::gemm", {"gemm.cu": src(r'''
    #include <torch/extension.h>
    #include <cuda_bf16.h>
    #include <cstdint>

    __device__ __forceinline__ void ldmatrix_x4(uint32_t* r, const void* smem) {
      uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    }

    __device__ __forceinline__ void mma_bf16(float* d, const uint32_t* a, const uint32_t* b) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }

    __device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
      uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(addr), "l"(gmem));
    }

    __global__ void gemm_kernel(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
      __shared__ __align__(128) __nv_bfloat16 sA[128 * 32];
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
      uint32_t a_frag[4], b_frag[2] = {0u, 0u};
      cp_async_16(sA + threadIdx.x * 8, A + blockIdx.x * 128 * K + threadIdx.x * 8);
      asm volatile("cp.async.wait_all;\n" ::);
      __syncthreads();
      ldmatrix_x4(a_frag, sA);
      mma_bf16(acc, a_frag, b_frag);
      C[blockIdx.x * N + threadIdx.x] = acc[0];
    }

    void gemm(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
      int M = a.size(0), K = a.size(1), N = b.size(1);
      gemm_kernel<<<M / 128, 128>>>(reinterpret_cast<const __nv_bfloat16*>(a.data_ptr()),
                                    reinterpret_cast<const __nv_bfloat16*>(b.data_ptr()), c.data_ptr<float>(), M, N, K);
    }
''')})

LEGIT["lru_cache_config_on_shapes"] = (["triton"], "main.py::run", {"main.py": src('''
    from functools import cache, lru_cache
    import typing

    import torch
    import triton
    import triton.language as tl


    @lru_cache(maxsize=128)
    def pick_config(M: int, N: int, dtype: torch.dtype) -> typing.Tuple[int, int]:
        if dtype == torch.float16 and N >= 4096:
            return 128, 8
        return 64, 4


    @cache
    def num_sms(device_index: int) -> int:
        return torch.cuda.get_device_properties(device_index).multi_processor_count


    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * s, mask=offs < n)


    def run(x, y):
        block, warps = pick_config(x.shape[0], x.shape[-1], x.dtype)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, block),)](x, y, n, 2.0, BLOCK=block, num_warps=warps)
''')})

LEGIT["cpp_shape_cache_and_stream"] = (["cuda_cpp"], "ops.cpp::gelu_add", {"ops.cpp": src(r'''
    #include <torch/extension.h>
    #include <ATen/cuda/CUDAContext.h>
    #include <unordered_map>
    #include <string>

    namespace ops {
    // Plans cached on shapes and dtypes (not on pointers).
    static std::unordered_map<std::string, int> plan_cache;

    int plan_for(int64_t m, int64_t n, c10::ScalarType t) {
      std::string key = std::to_string(m) + "x" + std::to_string(n) + ":" + std::to_string((int)t);
      auto it = plan_cache.find(key);
      if (it != plan_cache.end()) return it->second;
      int plan = (m * n > (1 << 20)) ? 2 : 1;
      plan_cache.emplace(key, plan);
      return plan;
    }
    }  // namespace ops

    torch::Tensor gelu_add(torch::Tensor x, torch::Tensor y) {
      int plan = ops::plan_for(x.size(0), x.size(1), x.scalar_type());
      auto out = at::gelu(x + y);
      if (plan == 2) { out = out.contiguous(); }
      cudaStream_t side;
      cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
      cudaStreamDestroy(side);
      return out;
    }
''')})

LEGIT["class_runner_with_docstring"] = (["pytorch"], "main.py::run", {"main.py": src('''
    """A solution whose docstring mentions cudaStreamSetAttribute and /proc/self/maps: a mention is not a use."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import Tensor


    class Runner:
        def __init__(self):
            self.cache = {}
            self.calls = 0

        def __call__(self, x: Tensor, w: Tensor) -> Tensor:
            self.calls += 1
            key = (tuple(x.shape), x.dtype)
            if key not in self.cache:
                self.cache[key] = math.sqrt(x.shape[-1])
            return F.linear(x, w) / self.cache[key]


    _runner = Runner()


    def run(x, w):
        out = _runner(x, w)
        if out.data_ptr() == 0:
            raise RuntimeError("empty output")
        return out
''')})

LEGIT["kernelbench_style_module"] = (["pytorch"], "model.py::run", {"model.py": src('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, hidden: int = 4096):
            super().__init__()
            self.norm = nn.LayerNorm(hidden)
            self.register_buffer("scale", torch.ones(hidden))

        def forward(self, x):
            return self.norm(x) * self.scale


    _model = None


    def run(x):
        global _model
        if _model is None:
            _model = Model(x.shape[-1]).to(x.device, x.dtype).eval()
        with torch.inference_mode():
            return _model(x)
''')})

LEGIT["cute_dsl_style"] = (["cute_dsl"], "main.py::run", {"main.py": src('''
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack


    @cute.kernel
    def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * 256 + tidx
        gC[i] = gA[i] + gB[i]


    @cute.jit
    def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        add_kernel(mA, mB, mC).launch(grid=[mA.shape[0] // 256, 1, 1], block=[256, 1, 1], stream=stream)


    _compiled = {}


    def run(a, b, c):
        key = (a.shape, a.dtype)
        if key not in _compiled:
            _compiled[key] = cute.compile(add, from_dlpack(a), from_dlpack(b), from_dlpack(c),
                                          cuda.CUstream(torch.cuda.current_stream().cuda_stream))
        _compiled[key](from_dlpack(a), from_dlpack(b), from_dlpack(c), cuda.CUstream(torch.cuda.current_stream().cuda_stream))
''')})

LEGIT["multi_file_sibling_imports"] = (["pytorch"], "main.py::run", {
    "main.py": "from helpers import OFFSET, TABLE, shift\nfrom ops.scale import scale\nimport ops.scale as sc\n\nTABLE['k'] = 1\nsc.FACTOR = 2.0\n\n\ndef run(x):\n    return scale(shift(x)) + OFFSET\n",
    "helpers.py": "OFFSET = 100.0\nTABLE = {}\n\n\ndef shift(x):\n    return x + 1.0\n",
    "ops/__init__.py": "",
    "ops/scale.py": "FACTOR = 3.0\n\n\ndef scale(x):\n    return FACTOR * x\n",
})


def make_solution(languages: list[str], entry_point: str, sources: dict[str, str], name: str = "sol") -> Solution:
    return Solution.model_validate({
        "name": name,
        "definition": "guards_test",
        "spec": {"languages": languages, "entry_point": entry_point},
        "sources": [{"path": path, "content": content} for path, content in sources.items()],
    })


def test_there_are_at_least_twelve_legitimate_solutions():
    assert len(LEGIT) >= 12


@pytest.mark.parametrize("name", sorted(LEGIT))
def test_legitimate_solution_has_no_reject_finding(name: str):
    languages, entry_point, sources = LEGIT[name]
    findings = analyze_solution(make_solution(languages, entry_point, sources, name=name))
    assert not rejects(findings), findings


def test_legitimate_solutions_warn_only_where_expected():
    expected = {"ptx_mma_ldmatrix_cp_async": {"CPP-ASM"}}
    for name, (languages, entry_point, sources) in LEGIT.items():
        findings = analyze_solution(make_solution(languages, entry_point, sources, name=name))
        assert {f.rule for f in findings} == expected.get(name, set()), (name, findings)


def test_ptx_asm_warns_once_per_statement_with_exact_lines():
    _, _, sources = LEGIT["ptx_mma_ldmatrix_cp_async"]
    text = sources["gemm.cu"]
    findings = analyze_cpp(text, "gemm.cu")
    asm_lines = [number for number, line in enumerate(text.splitlines(), start=1) if "asm volatile" in line]
    assert [f.line for f in findings] == asm_lines
    assert all(f.rule == "CPP-ASM" and f.severity == "warn" and "mma/ldmatrix/cp.async" in f.message for f in findings)


# --- aliases and indirection ----------------------------------------------------------------------------


def test_tf32_through_an_alias_of_torch():
    findings = analyze_python("import torch as t\nt.backends.cuda.matmul.allow_tf32 = True\n", "a.py")
    assert findings == [Finding("PY-PRECISION", "warn", "a.py", 2, findings[0].message)]
    assert "torch.backends.cuda.matmul.allow_tf32" in findings[0].message


def test_getattr_of_dunder_import_resolves_the_module():
    findings = analyze_python("sock = getattr(__import__('socket'), 'socket')\n", "a.py")
    assert ("PY-NET", 1) in rules_at(findings)
    assert all(f.severity == "reject" for f in findings)


def test_alias_to_a_builtin_shadowed_by_a_parameter_is_local():
    source = "def run(x, compile=None, open=None, exec=None):\n    return compile, open(x), exec\n"
    assert analyze_python(source, "a.py") == []


def test_a_module_alias_inside_a_function_still_resolves():
    source = "def run(x):\n    import subprocess as s\n    runner = s.check_output\n    return runner(['id'])\n"
    lines = {f.line for f in analyze_python(source, "a.py") if f.rule == "PY-PROC"}
    assert lines == {2, 3, 4}  # the import, the alias, the call through the alias


def test_class_attribute_alias_and_nonlocal_rebinding():
    source = src('''
        import os

        class K:
            sh = os.system

        def outer():
            f = None
            def inner():
                nonlocal f
                f = os.popen
            return f
    ''')
    lines = {f.line for f in analyze_python(source, "a.py") if f.rule == "PY-PROC"}
    assert lines == {4, 10, 11}  # `return f`: f was rebound (nonlocal) to os.popen


def test_a_long_alias_chain_in_source_order_resolves():
    chain = "import os\na0 = os\n" + "".join(f"a{i + 1} = a{i}\n" for i in range(300)) + "a300.system('id')\n"
    assert rules_at(analyze_python(chain, "deep.py")) == {("PY-PROC", 303)}


def test_names_aliased_too_deeply_are_refused_not_passed():
    chain = "".join(f"a{i + 1} = a{i}\n" for i in reversed(range(300))) + "import os\na0 = os\na300.system('id')\n"
    findings = analyze_python(chain, "deep.py")
    assert [(f.rule, f.severity, f.line) for f in findings] == [("ANALYZER-LIMIT", "reject", 1)]


def test_a_syntax_error_is_not_a_finding():
    assert analyze_python("def run(x):\n    return x +\n", "broken.py") == []
    assert analyze_python("import socket\nx = (\n", "broken.py") == []


def test_comments_and_strings_do_not_trigger_cpp_token_rules():
    source = src('''
        // system("rm -rf /"); fork(); dlopen("x", 0); std::thread t;
        /* cudaLimitPersistingL2CacheSize accessPolicyWindow
           setAllowTF32CuBLAS(true) */
        void f(bool ok) { TORCH_CHECK(ok, "call popen() or setenv() yourself"); }
    ''')
    assert analyze_cpp(source, "a.cu") == []


def test_raw_string_in_cpp_is_a_string():
    source = 'const char* s = R"raw(system("x"); "quoted" fork();)raw";\nint y = 0;\n'
    assert analyze_cpp(source, "a.cpp") == []


def test_inline_cpp_findings_are_mapped_to_python_lines():
    source = src('''
        import torch
        from torch.utils.cpp_extension import load_inline

        SRC = """
        #include <torch/extension.h>
        #include <cstdlib>
        void f() {
          system("id");
          at::globalContext().setAllowTF32CuBLAS(true);
        }
        """
        ext = load_inline(name="x", cpp_sources=SRC, functions=["f"])
    ''')
    findings = analyze_python(source, "main.py")
    assert rules_at(findings) == {("CPP-PROC", 8), ("CPP-PRECISION", 9)}
    assert all(f.path == "main.py" for f in findings)


# --- multi-file solutions -------------------------------------------------------------------------------


def test_analyze_solution_over_several_files_sorted_with_exact_paths_and_lines():
    solution = make_solution(["pytorch"], "main.py::run", {
        "main.py": src('''
            import torch
            import os
            from helpers import fast

            torch.backends.cuda.matmul.allow_tf32 = True


            def run(x):
                return fast(x)
        '''),
        "helpers.py": src('''
            import ctypes

            def fast(x):
                return x * 2
        '''),
        "csrc/kernel.cu": src('''
            #include <torch/extension.h>
            __global__ void k(float* x) { x[0] = 1.f; }
            void launch(torch::Tensor t) {
              cudaCtxResetPersistingL2Cache();
            }
        '''),
        "notes/blob.txt": ELF_B64,
        "prebuilt/kernel.cubin": "not really a cubin",
    })
    findings = analyze_solution(solution)
    assert [(f.path, f.line, f.rule) for f in findings] == [
        ("csrc/kernel.cu", 4, "CPP-L2"),
        ("helpers.py", 1, "PY-FFI"),
        ("main.py", 5, "PY-PRECISION"),
        ("notes/blob.txt", 1, "SRC-BINARY"),
        ("prebuilt/kernel.cubin", 1, "SRC-BINARY"),
    ]
    assert findings == sorted(findings, key=lambda f: (f.path, f.line))
    assert [f.severity for f in findings] == ["reject", "reject", "warn", "reject", "reject"]  # precision: judged at run time


def test_own_modules_are_local_only_in_analyze_solution_context():
    main = "from helpers import TABLE\nimport torch\nTABLE['k'] = 1\ntorch.mm = None\n"
    solution = make_solution(["pytorch"], "main.py::run", {"main.py": main + "def run(x):\n    return x\n", "helpers.py": "TABLE = {}\n"})
    findings = analyze_solution(solution)
    assert rules_at(findings) == {("PY-PATCH", 4)}


def test_a_solution_file_named_like_a_banned_module_does_not_hide_it():
    solution = make_solution(["pytorch"], "main.py::run", {
        "main.py": "import ctypes\n\ndef run(x):\n    return ctypes.CDLL('libc.so.6')\n",
        "ctypes.py": "CDLL = None\n",
    })
    assert ("PY-FFI", 1) in rules_at(analyze_solution(solution))


# A solution file named like a library module (os.py, ctypes/__init__.py, urllib/request.py) is not the solution's own
# module for the rules: builtin and frozen modules (os, sys, time) always win over it, an import inside a call gets the
# library, so calls through the name are judged as the library's. The file itself is PY-SHADOW: while the solution is
# imported it stands in for the library in every module imported then.
SHADOW_ATTACKS: list[tuple[str, str, dict[str, str], str]] = [
    ("os-system", "PY-PROC", {"os.py": "def system(cmd):\n    return 0\n"},
     "import os\n\ndef run(x):\n    os.system('ls')  # HERE\n    return x\n"),
    ("subprocess-run", "PY-PROC", {"subprocess.py": "def run(args):\n    return None\n"},
     "import subprocess\n\ndef run(x):\n    subprocess.run(['ls'])  # HERE\n    return x\n"),
    ("socket-socket", "PY-NET", {"socket.py": "class socket:\n    pass\n"},
     "import socket\n\ndef run(x):\n    s = socket.socket()  # HERE\n    return x\n"),
    ("ctypes-package", "PY-FFI", {"ctypes/__init__.py": "def CDLL(name):\n    return None\n"},
     "import ctypes\n\ndef run(x):\n    ctypes.CDLL('libc.so.6')  # HERE\n    return x\n"),
    ("pickle-loads", "PY-DECODE", {"pickle.py": "def loads(data):\n    return data\n"},
     "import pickle\n\nBLOB = b'x'\n\ndef run(x):\n    pickle.loads(BLOB)  # HERE\n    return x\n"),
    ("os-alias-getattr", "PY-DYNAMIC", {"os/__init__.py": "NAME = 'system'\n"},
     "import os as o\n\ndef run(x, name):\n    return getattr(o, name)  # HERE\n"),
    ("urllib-request-dotted", "PY-NET", {"urllib/request.py": "def urlopen(url):\n    return None\n"},
     "from urllib import request\n\ndef run(x):\n    request.urlopen('http://127.0.0.1:1/')  # HERE\n    return x\n"),
    ("sys-exit", "PY-EXIT", {"sys.py": "def exit(code=0):\n    return code\n"},
     "import sys\n\ndef run(x):\n    sys.exit(0)  # HERE\n"),
    ("time-patch", "PY-PATCH", {"time.py": "def perf_counter():\n    return 0.0\n"},
     "import time\n\ntime.perf_counter = lambda: 0.0  # HERE\n\ndef run(x):\n    return x\n"),
    ("torch-patch", "PY-PATCH", {"torch/__init__.py": "def mm(a, b):\n    return a\n"},
     "import torch\n\ntorch.mm = lambda a, b: a  # HERE\n\ndef run(x):\n    return x\n"),
    ("importlib-reload", "PY-SYSMODULES", {"importlib.py": "def reload(m):\n    return m\n"},
     "import importlib\nimport torch\n\ndef run(x):\n    importlib.reload(torch)  # HERE\n    return x\n"),
]


@pytest.mark.parametrize("rule, shadows, main", [pytest.param(rule, shadows, main, id=name) for name, rule, shadows, main in SHADOW_ATTACKS])
def test_a_solution_file_named_like_a_library_is_judged_as_the_library(rule: str, shadows: dict[str, str], main: str):
    solution = make_solution(["pytorch"], "main.py::run", {"main.py": main, **shadows})
    findings = analyze_solution(solution)
    assert ("main.py", marked(main), rule) in {(f.path, f.line, f.rule) for f in findings}, findings
    shadow_findings = [f for f in findings if f.rule == "PY-SHADOW"]
    assert [(f.path, f.line) for f in shadow_findings] == [(path, 1) for path in sorted(shadows)]
    assert all(f.severity == RULES["PY-SHADOW"][0] and "rename" in f.message for f in shadow_findings)


def test_a_file_named_like_a_library_is_reported_alone_and_in_packages():
    assert rules_at(analyze_python("x = 1\n", "subprocess.py")) == {("PY-SHADOW", 1)}
    for path in ("os/__init__.py", "urllib/request.py", "torch/ops.py", "triton.py", "numpy/linalg/__init__.py", "yaml.py",
                 "pynvml.py", "cffi.py", "requests/__init__.py", "sympy.py", "solbench/bench/measure.py"):
        assert rules_at(analyze_python("x = 1\n", path)) == {("PY-SHADOW", 1)}, path
    message = analyze_python("x = 1\n", "urllib/request.py")[0].message
    assert "'urllib.request'" in message and "'urllib'" in message
    # a library's name deeper in the solution's own package, or on a file that is not Python, shadows nothing
    for path in ("rmsnorm_ops/os.py", "rmsnorm_ops/random.py", "rmsnorm_ops/types/__init__.py", "os.txt", "torch.json", "main.py",
                 "rmsnorm_kernels.py", "__init__.py"):
        assert analyze_python("x = 1\n", path) == [], path


def test_a_file_named_like_a_library_beside_an_entry_point_in_a_subfolder_shadows_it():
    """The entry point's folder is on sys.path too: src/os.py is importable as os when the entry point is src/main.py."""
    main = "import os\n\n\ndef run(x):\n    os.system('true')  # HERE\n    return x\n"
    shadow = {"src/os.py": "def system(cmd):\n    return 0\n"}
    findings = analyze_solution(make_solution(["pytorch"], "src/main.py::run", {"src/main.py": main, **shadow}))
    assert {(f.path, f.line, f.rule) for f in findings} >= {("src/os.py", 1, "PY-SHADOW"), ("src/main.py", marked(main), "PY-PROC")}, findings
    # with the entry point at the root, src/os.py is importable only as src.os: no shadow
    findings = analyze_solution(make_solution(["pytorch"], "main.py::run", {"main.py": main, **shadow}))
    assert "PY-SHADOW" not in {f.rule for f in findings}, findings


def test_own_modules_with_names_no_library_uses_stay_local():
    main = src('''
        import torch
        import rmsnorm_kernels
        import rmsnorm_ops.tuning as tuning
        from rmsnorm_ops import random as ops_random
        from rmsnorm_ops.tuning import CONFIGS

        rmsnorm_kernels.TABLE["k"] = 1
        rmsnorm_kernels.BLOCK = 128
        tuning.CONFIGS["big"] = (256, 8)
        ops_random.SEED = 3
        CONFIGS["small"] = (64, 4)


        def run(x: torch.Tensor) -> torch.Tensor:
            return rmsnorm_kernels.scale(x) * ops_random.SEED
    ''')
    solution = make_solution(["pytorch"], "main.py::run", {
        "main.py": main,
        "rmsnorm_kernels.py": "TABLE = {}\nBLOCK = 64\n\ndef scale(x):\n    return x * 2\n",
        "rmsnorm_ops/__init__.py": "",
        "rmsnorm_ops/tuning.py": "CONFIGS = {}\n",
        "rmsnorm_ops/random.py": "SEED = 0\n",
    })
    assert analyze_solution(solution) == []


def test_reading_an_own_source_by_relative_name_is_silent_only_when_it_exists():
    code = "K = open('kernel.cu').read()\ndef run(x):\n    return x\n"
    with_file = make_solution(["pytorch"], "main.py::run", {"main.py": code, "kernel.cu": "// k\n"})
    without = make_solution(["pytorch"], "main.py::run", {"main.py": code, "other.cu": "// k\n"})
    assert analyze_solution(with_file) == []
    assert rules_at(analyze_solution(without)) == {("PY-FILE-READ", 1)}


def test_rules_table_is_complete_and_well_formed():
    assert all(severity in ("reject", "warn") and description for severity, description in RULES.values())
    used = {rule for _, rule, _ in PY_ATTACKS} | {rule for _, rule, _ in CPP_ATTACKS}
    used |= {rule for _, rule, _, _ in SHADOW_ATTACKS} | {"PY-SHADOW"}  # PY-SHADOW needs a file name: tested with SHADOW_ATTACKS
    untested = set(RULES) - used - {"CPP-OPAQUE", "SRC-BINARY", "ANALYZER-LIMIT"}
    assert not untested, f"rules with no attack case: {sorted(untested)}"


def test_public_names():
    assert static_module.__all__ == ["Finding", "RULES", "analyze_solution", "analyze_python", "analyze_cpp"]
    finding = Finding("PY-NET", "reject", "a.py", 1, "x")
    with pytest.raises(Exception):
        finding.line = 2  # type: ignore[misc]


def test_analysis_is_fast_on_a_large_file():
    big = "\n".join(LEGIT["triton_matmul_autotune"][2]["kernel.py"] for _ in range(10))
    start = time.perf_counter()
    analyze_python(big, "big.py")
    assert time.perf_counter() - start < 1.0


def _unused(*_: Any) -> None:  # keeps `Any` imported for annotations above
    pass


def test_precision_findings_are_warnings_and_downcasts_are_noted_under_strict_only():
    """The static side warns on precision flags and on explicit downcasts alike; the run-time checks
    judge them (under strict: a flag left changed, outputs less accurate than fp32)."""
    solution = make_solution(["pytorch"], "main.py::run", {"main.py": src('''
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True

        def run(a, b):
            return (a.half() @ b.half()).float()
    ''')})
    strict = analyze_solution(solution, "strict")
    assert [(f.rule, f.severity, f.line) for f in strict] == [("PY-PRECISION", "warn", 2), ("PY-DOWNCAST", "warn", 5)]
    relaxed = analyze_solution(solution, "relaxed")
    assert [(f.rule, f.severity, f.line) for f in relaxed] == [("PY-PRECISION", "warn", 2)]
    assert relaxed[0].message.endswith("(allowed under the relaxed precision policy)")
