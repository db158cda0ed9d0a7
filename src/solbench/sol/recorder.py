"""Recording a reference's aten ops: every op with the tensors it reads and writes.

The recorder is a TorchDispatchMode above a FakeTensorMode (plus a TorchFunctionMode for a few
composite functions recorded whole and for device arguments). Each op becomes an OpNode whose
tensors are TensorInfos: shapes (ints, or sympy expressions of the axes in a symbolic capture),
strides, storage identity, role, and what the analysis needs beyond shapes:

- value precision: the narrowest format that holds the values (solbench.sol.values), carried
  through casts, views, gathers and scaling by per-tensor or block scales;
- constants: tensors that depend on no problem input (masks built from shapes, decode tables) are
  computed for real when their size is known and small, so their values can be read (a causal mask,
  a table of e2m1 values); random draws are not constants;
- real data: an op whose tensor arguments are all real (constants, integer inputs made real by the
  caller) runs for real, when its output is small, so data-dependent sizes come out exact;
- data-dependent ops on fake tensors (nonzero, boolean indexing, unique, bincount, `.item()`) take
  their least possible size or value, which never makes the bound more than the work certainly
  needed; each such op is noted.

Device arguments naming CUDA become the CPU: the analysis needs no GPU (`.cuda()` is a no-op).
"""

from __future__ import annotations

import itertools
from typing import Any

from solbench.sol.graph import OpNode, TensorInfo
from solbench.sol.trees import leaves, map_leaves, tensor_leaves
from solbench.sol.values import after_cast, widest
from solbench.data.dtypes import DType

# Ops that only describe tensors (no data moves) and are left out of the graph.
METADATA_OPS = {"prim.device.default", "aten.sym_size.int", "aten.sym_stride.int", "aten.sym_numel.default", "aten.is_same_size.default",
                "aten.sym_storage_offset.default"}
REAL_LIMIT_BYTES = 64 << 20  # the largest output an op may have to be computed for real (its shadow)
SHADOW_BYTES = 256 << 20  # real values kept beside fake tensors, in all
FILL_SHADOW_BYTES = 16 << 20  # a larger tensor of one value (zeros, ones) gets no shadow: it is a buffer, not data
SKIP_UNKEPT_SHADOWS = True  # an op that writes none of its arguments is not run for real when no shadow of it could be kept
_RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "normal_", "uniform",
           "uniform_", "bernoulli", "bernoulli_", "exponential", "exponential_", "random", "random_", "multinomial", "native_dropout",
           "cauchy_", "geometric_", "log_normal_"}
_UNIFORM_FACTORIES = {"zeros", "ones", "full", "empty", "empty_strided", "new_zeros", "new_ones", "new_full", "new_empty",
                      "zeros_like", "ones_like", "full_like", "empty_like", "scalar_tensor", "fill", "fill_", "zero_"}
_MASK_MAKERS = {"triu", "tril", "lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_not", "bitwise_and",
                "bitwise_or", "where", "masked_fill", "arange"}
_SAME_VALUES = {"_to_copy", "to", "copy", "clone", "contiguous", "alias", "lift_fresh", "lift_fresh_copy", "detach", "_copy_from",
                "expand", "expand_copy", "permute_copy", "transpose_copy", "view_copy", "_unsafe_view", "repeat", "repeat_interleave",
                "flip", "roll", "constant_pad_nd", "neg", "abs", "cat", "stack", "index", "index_select", "gather", "embedding",
                "take_along_dim", "_unsafe_index", "select_scatter", "slice_scatter", "unfold_copy", "tile"}
_GATHERS = {"index", "index_select", "gather", "embedding", "take_along_dim", "_unsafe_index"}
_REPEATS = {"expand", "expand_copy", "repeat", "repeat_interleave", "tile"}
_SCALINGS = {"mul", "div", "true_divide"}
SCALE_RATIO = 8  # a scale holds at most one independent value per this many elements it scales


class ValuesNeeded(BaseException):
    """A capture that can only stand for a workload with its values (symbolic sizes, data-dependent work)
    ends here: the rest of it would be thrown away. A BaseException, so that a reference's own
    `except Exception` cannot swallow it."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Recorder:
    """Records OpNodes while a reference runs. `fake_mode` is the FakeTensorMode below it."""

    def __init__(self, decompose: Any, fake_mode: Any, hint: Any = None, stop_at_values: bool = False):
        import torch
        import torch.nn.functional as functional
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                return recorder.dispatch(self, func, args, kwargs or {})

        whole = {getattr(functional, name): name for name in WHOLE_FUNCTIONS}

        class FunctionMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                moved = _on_cpu(func, args, kwargs)
                if moved is not None:
                    func, args, kwargs = moved
                    if func is None:
                        return args[0]
                if func in whole and not recorder._suppressed:
                    return recorder.record_whole(whole[func], func, args, kwargs)
                if func is torch.einsum and not recorder._suppressed:
                    made = recorder.record_einsum(args, kwargs)
                    if made is not None:
                        return made
                return func(*args, **kwargs)

        self.mode = Mode()
        self.function_mode = FunctionMode()
        self.fake_mode = fake_mode
        self.hint = hint or (lambda value: value)  # a size (int or sympy expression) as an int, by the capture's axis values
        self.decompose = decompose
        self.nodes: list[OpNode] = []
        self.notes: list[str] = []
        self.data_dependent: list[str] = []  # ops whose sizes or values depend on data not known here
        self.value_sensitive = False  # a mask-like constant of unknown values feeds input-dependent work
        self.stop_at_values = stop_at_values  # end the capture (ValuesNeeded) as soon as it is known to need values
        self._infos: dict[int, tuple[Any, TensorInfo]] = {}  # id(tensor) -> (tensor kept alive, info)
        self._ids = itertools.count()
        self._decomposing: list[str] = []
        self._ops: dict[Any, _OpFacts] = {}  # what each op is, worked out once
        self._suppressed = 0
        self._shadows: dict[int, tuple[Any, Any]] = {}  # id(fake tensor) -> (fake tensor kept alive, its real values)
        self._shadow_bytes = 0
        self._shadowed_storages: dict[int, list[int]] = {}  # storage identity -> ids of the fake tensors shadowed on it
        self._masklike: set[int] = set()  # TensorInfo ids of constants made by mask-making ops
        self.unkept_skipped = 0  # real runs of ops left out because the shadow budget could keep none of their outputs

    def __enter__(self) -> Recorder:
        self.function_mode.__enter__()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mode.__exit__(*exc)
        self.function_mode.__exit__(*exc)

    def release(self) -> None:
        """Let go of every tensor seen and of the shadows once the capture is over. The modes close over
        the recorder (a reference cycle), so without this they would stay until the garbage collector's
        next full pass, hundreds of MB of shadows among them; the graph keeps what it needs (its
        TensorInfos, and the values of constants)."""
        self._infos.clear()
        self._shadows.clear()
        self._shadowed_storages.clear()
        self._shadow_bytes = 0

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # --- tensors ----------------------------------------------------------------------------------

    def info(self, tensor: Any, *, constant: bool | None = None) -> TensorInfo:
        known = self._infos.get(id(tensor))
        if known is not None and known[0] is tensor:
            return known[1]
        try:
            dtype: DType | None = DType.from_torch(tensor.dtype)
            bits = dtype.bits
        except ValueError:
            dtype, bits = None, tensor.element_size() * 8
        storage = tensor.untyped_storage()
        packed = 2 if dtype is not None and dtype.is_packed else 1  # fp4 storage shape is halved
        shape = tuple(_plain(s) for s in tensor.shape)
        stride = tuple(_plain(s) for s in tensor.stride())
        if packed == 2 and shape:
            shape = (*shape[:-1], shape[-1] * 2)
            stride = tuple(s * 2 for s in stride[:-1]) + (stride[-1],)
        info = TensorInfo(next(self._ids), shape, stride, dtype, bits, storage._cdata, _plain(tensor.storage_offset()), _plain(storage.nbytes()))
        if constant is None and _is_real(tensor):
            constant = True  # a real tensor the reference made itself (a literal): problem inputs are marked by the caller
        info.constant = bool(constant)
        if constant:
            info.values = self.shadow(tensor)  # its value precision is found from them when needed
        self._infos[id(tensor)] = (tensor, info)
        return info

    # --- ops ----------------------------------------------------------------------------------------

    def record_whole(self, name: str, func: Any, args: tuple, kwargs: dict) -> Any:
        import torch

        self._suppressed += 1
        try:
            result = func(*args, **kwargs)
        finally:
            self._suppressed -= 1
        parameters = WHOLE_FUNCTIONS[name]
        bound = dict(zip(parameters, args))
        bound.update({k: v for k, v in kwargs.items() if k in parameters})
        ordered = tuple(self.info(bound[p]) if isinstance(bound.get(p), torch.Tensor) else _plain_tree(bound.get(p)) for p in parameters)
        inputs = [a for a in ordered if isinstance(a, TensorInfo)]
        outputs = [self.info(t) for t in tensor_leaves(result)]
        self.nodes.append(OpNode(len(self.nodes), f"torch.nn.functional.{name}", name, inputs, outputs, ordered, {}))
        return result

    def record_einsum(self, args: tuple, kwargs: dict) -> Any:
        """A two-operand einsum on fake tensors, recorded as one node and made from its equation (its
        decomposition into views and bmm is slow on fake tensors); None when it must run as it is
        (real tensors, gradients, other forms)."""
        import torch
        from torch.utils._python_dispatch import _disable_current_modes

        from solbench.sol.einsum import output_shape

        if self.fake_mode is None or kwargs or len(args) != 3 or not isinstance(args[0], str):
            return None
        equation, a, b = args
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.requires_grad or b.requires_grad:
            return None
        shape = output_shape(equation, tuple(a.shape), tuple(b.shape))
        if shape is None:
            return None
        self._suppressed += 1
        try:
            out = torch.empty(shape, dtype=torch.result_type(a, b), device=a.device)
        finally:
            self._suppressed -= 1
        shadows = [self.shadow(a), self.shadow(b)]
        if all(x is not None for x in shadows) and out.numel() * out.element_size() <= REAL_LIMIT_BYTES:
            with _disable_current_modes():
                self.give_shadow(out, torch.einsum(equation, *shadows))
        inputs = [self.info(a), self.info(b)]
        constant = all(i.constant for i in inputs)
        output = self.info(out, constant=constant)
        self.nodes.append(OpNode(len(self.nodes), "torch.einsum", "einsum", inputs, [output], (equation, *inputs), {}))
        return out

    def dispatch(self, mode: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        import torch

        known = self._ops.get(func)
        if known is None:
            known = self._ops[func] = _OpFacts(func, self.decompose)
        name, packet = known.name, known.packet
        if known.metadata or self._suppressed:
            return func(*args, **kwargs)
        if known.replacement is not None:
            replacement = known.replacement
            if replacement is not None:
                self._decomposing.append(name)
                try:
                    with mode:
                        return replacement(*args, **kwargs)
                finally:
                    self._decomposing.pop()
        flat_in = tensor_leaves((args, kwargs))
        in_infos = [self.info(t) for t in flat_in]
        constant_in = all(i.constant for i in in_infos) and packet not in _RANDOM
        shadowed = self.fake_mode is not None and packet not in _RANDOM and all(self.shadow(t) is not None for t in flat_in) \
            and (bool(flat_in) or _concrete(args, kwargs))
        result = self._run(func, packet, args, kwargs, shadowed, pure=not known.written)
        flat_out = tensor_leaves(result)
        if all(t.device.type == "meta" for t in flat_in + flat_out):
            return result  # meta tensors hold no data: building a module's structure costs nothing
        mutated = [value for value in (args[i] if i < len(args) else kwargs.get(n) for i, n in known.written) if isinstance(value, torch.Tensor)]
        if not shadowed:
            for tensor in mutated:  # written with values not known here
                self._forget(tensor)
        out_infos = []
        for tensor in flat_out:
            existing = self._infos.get(id(tensor))
            out_infos.append(existing[1] if existing and existing[0] is tensor else self.info(tensor, constant=constant_in))
        for tensor in mutated:
            if not constant_in:
                self.info(tensor).constant = False
        is_view = known.is_view
        self._track_values(packet, args, in_infos, out_infos, constant_in, is_view)
        _track_zeros(packet, args, in_infos, out_infos, is_view, self.hint)
        to_info = lambda a: self.info(a) if isinstance(a, torch.Tensor) else _plain(a)  # noqa: E731
        self.nodes.append(
            OpNode(
                len(self.nodes), name, packet, in_infos, out_infos, map_leaves(to_info, args), map_leaves(to_info, kwargs),
                is_view=is_view, mutated=[self.info(t) for t in mutated], decomposed_from=self._decomposing[-1] if self._decomposing else None,
            )
        )
        return result

    # --- running an op, and its shadow -------------------------------------------------------------

    def shadow(self, tensor: Any) -> Any:
        """The real values behind a tensor: itself when real, the shadow of a fake one, or None."""
        if _is_real(tensor):
            return tensor
        found = self._shadows.get(id(tensor))
        return found[1] if found is not None and found[0] is tensor else None

    def give_shadow(self, fake: Any, real: Any) -> None:
        size = real.numel() * real.element_size()
        if self._shadow_bytes + size <= SHADOW_BYTES:
            self._shadows[id(fake)] = (fake, real)
            self._shadowed_storages.setdefault(fake.untyped_storage()._cdata, []).append(id(fake))
            self._shadow_bytes += size

    def _forget(self, tensor: Any) -> None:
        """Drop the shadows of every tensor sharing this one's storage (written with unknown values)."""
        for key in self._shadowed_storages.pop(tensor.untyped_storage()._cdata, []):
            self._shadows.pop(key, None)

    def _run(self, func: Any, packet: str, args: tuple, kwargs: dict, shadowed: bool, pure: bool = False) -> Any:
        """The op on the (fake) tensors, with its shadow computed from the arguments' shadows; a
        data-dependent op takes its sizes from the shadows, else its least result. `pure`: the op
        writes none of its arguments."""
        from solbench.sol.least import least_result, needs_least, shape_rule_result

        if needs_least(packet, args) or packet == "_local_scalar_dense":
            if shadowed and self.fake_mode is not None:
                return self._from_shadows(func, args, kwargs)
            if self.fake_mode is not None:
                self.data_dependent.append(packet)
                if self.stop_at_values:
                    raise ValuesNeeded(f"data-dependent ops ({packet}) need the workload's own values")
                self.note(f"data-dependent op {packet} on values not known here: its least size (or value) is taken")
                return least_result(func, packet, args, kwargs, self.fake_mode)
        try:
            result = func(*args, **kwargs)
        except Exception as exc:
            made = shape_rule_result(func, packet, args, kwargs, exc)
            if made is None:
                raise
            self.note(f"{packet}: its fake-tensor kernel refused these arguments ({type(exc).__name__}); its output shape is derived")
            return made
        if shadowed and not (packet in _UNIFORM_FACTORIES and _tensor_bytes(result) > FILL_SHADOW_BYTES):
            self._shadow_outputs(func, args, kwargs, result, pure)
        return result

    def _real_arguments(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        import torch

        swap = lambda a: self.shadow(a) if isinstance(a, torch.Tensor) else a  # noqa: E731
        return map_leaves(swap, args), map_leaves(swap, kwargs)

    def _shadow_outputs(self, func: Any, args: tuple, kwargs: dict, result: Any, pure: bool = False) -> None:
        from torch.utils._python_dispatch import _disable_current_modes

        outputs = tensor_leaves(result)
        sizes = [r.numel() * r.element_size() for r in outputs]
        if not all(isinstance(size, int) for size in sizes) or sum(sizes) > REAL_LIMIT_BYTES:
            return
        if SKIP_UNKEPT_SHADOWS and pure and outputs and self._shadow_bytes + min(r.numel() for r in outputs) > SHADOW_BYTES:
            # give_shadow would refuse every output (each takes at least a byte an element) and the op writes
            # none of its arguments: running it for real would change nothing but the time and memory taken
            self.unkept_skipped += 1
            return
        real_args, real_kwargs = self._real_arguments(args, kwargs)
        with _disable_current_modes():
            try:
                real = func(*real_args, **real_kwargs)
            except Exception:  # noqa: BLE001 - an op the CPU cannot run for real: its outputs go without values
                return
        for fake, value in zip(outputs, tensor_leaves(real)):
            if tuple(fake.shape) == tuple(value.shape):
                self.give_shadow(fake, value)

    def _from_shadows(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A data-dependent op computed for real on the shadows; fake tensors of its real sizes."""
        import torch
        from torch.utils._python_dispatch import _disable_current_modes

        real_args, real_kwargs = self._real_arguments(args, kwargs)
        with _disable_current_modes():
            real = func(*real_args, **real_kwargs)
        schema = getattr(func, "_schema", None)
        if schema is not None and schema.returns and schema.returns[0].alias_info is not None and args and isinstance(args[0], torch.Tensor):
            return args[0]  # an in-place op: the fake tensor keeps its shape, its shadow was updated

        def fake(value: Any) -> Any:
            if not isinstance(value, torch.Tensor):
                return value
            made = self.fake_mode.from_tensor(value, static_shapes=True)
            self.give_shadow(made, value)
            return made

        return map_leaves(fake, real)

    def _track_values(self, packet: str, args: tuple, in_infos: list[TensorInfo], out_infos: list[TensorInfo], constant_in: bool,
                      is_view: bool) -> None:
        """Value precision, independence and mask-likeness of the outputs from the inputs."""
        base = packet.rstrip("_") if packet.endswith("_") and not packet.startswith("_") else packet
        if constant_in and base in _MASK_MAKERS:
            self._masklike.update(o.id for o in out_infos)
        elif constant_in and any(i.id in self._masklike for i in in_infos):
            self._masklike.update(o.id for o in out_infos)
        if not constant_in:
            for info in in_infos:
                if info.constant and info.values is None and info.id in self._masklike:
                    self.value_sensitive = True
                    if self.stop_at_values:
                        raise ValuesNeeded("a mask-like constant of symbolic size feeds the computation: its values are needed")
        if not in_infos:
            return
        data = [i for i in in_infos if i.dtype != DType.bool]
        for out in out_infos:
            if out.values is not None:
                continue  # a real constant: its values decided its format
            if is_view:  # the same values, seen another way
                out.value_dtype = in_infos[0].value_format if in_infos[0].dtype == out.dtype else after_cast(in_infos[0].value_format, out.dtype)
                out.independent = in_infos[0].independent_values  # an expanded view holds no more values than its source
            elif base in _SAME_VALUES:
                source = _value_source(base, in_infos, data)
                out.value_dtype = after_cast(widest([s.value_format for s in source]) if source else None, out.dtype)
                if source and (base in _REPEATS or base in {"_to_copy", "to", "clone", "contiguous", "alias", "detach", "copy"}):
                    out.independent = source[0].independent_values
            elif base in _SCALINGS and len(in_infos) >= 1:
                scaled = _scaled_operand(in_infos, out, self.hint)
                if scaled is not None:
                    out.value_dtype = after_cast(scaled.value_format, out.dtype)
            elif base in {"where", "masked_fill"}:
                branches = [i for i in in_infos if i.dtype != DType.bool]
                if branches:
                    out.value_dtype = after_cast(widest([b.value_format for b in branches]), out.dtype)


_ZEROS = {"zeros", "zeros_like", "new_zeros", "zero", "zero_"}
_SCATTERS = {"select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter"}
_SAME_ZEROS = {"_to_copy", "to", "clone", "contiguous", "alias", "detach", "neg", "copy"}


def _track_zeros(packet: str, args: tuple, in_infos: list[TensorInfo], out_infos: list[TensorInfo], is_view: bool, hint: Any) -> None:
    """How many nonzero elements the outputs can hold: zeros, slices scattered into zeros (the
    gradients of indexing), and sums and products of such, stay mostly zero."""
    if not out_infos:
        return
    out = out_infos[0]
    base = packet.rstrip("_") if packet.endswith("_") and not packet.startswith("_") else packet

    def nonzero(t: TensorInfo) -> int:  # sizes by the capture's axis values: symbolic ones cannot be compared
        return hint(t.numel) if t.nonzero is None else min(hint(t.nonzero), hint(t.numel))

    def share(t: TensorInfo) -> int:  # nonzeros of an operand, as elements of the (broadcast) output
        return nonzero(t) * max(1, hint(out.numel) // max(1, hint(t.numel)))

    fill = _fill_value(packet, args)
    if base in _ZEROS or (base in {"full", "new_full", "fill", "full_like"} and isinstance(fill, (int, float)) and fill == 0):
        out.nonzero = 0
    elif base in _SCATTERS and len(in_infos) >= 2:
        out.nonzero = min(hint(out.numel), nonzero(in_infos[0]) + nonzero(in_infos[1]))
    elif is_view or base in _SAME_ZEROS:
        source = in_infos[-1 if base == "copy" else 0]
        if source.nonzero is not None:
            out.nonzero = min(hint(out.numel), nonzero(source))
    elif base in {"add", "sub"} and len(in_infos) == 2 and any(t.nonzero is not None for t in in_infos):
        out.nonzero = min(hint(out.numel), share(in_infos[0]) + share(in_infos[1]))
    elif base == "mul" and any(t.nonzero is not None for t in in_infos):
        out.nonzero = min([hint(out.numel)] + [share(t) for t in in_infos])


def _fill_value(packet: str, args: tuple) -> Any:
    if packet.startswith(("full", "new_full")):
        return args[1] if len(args) > 1 else None
    return args[1] if len(args) > 1 and isinstance(args[1], (int, float)) else None


WHOLE_FUNCTIONS = {
    # Composite functions recorded as one node, whatever backend the capture device would pick (on
    # a CPU, SDPA may take a math path that upcasts bf16 to fp32). name -> parameters, in args order.
    "scaled_dot_product_attention": ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"),
}


def _value_source(base: str, in_infos: list[TensorInfo], data: list[TensorInfo]) -> list[TensorInfo]:
    if base == "embedding":
        return in_infos[:1]
    if base in _GATHERS:
        return in_infos[:1]
    if base in {"cat", "stack"}:
        return data or in_infos
    if base == "copy":
        return in_infos[1:2] or in_infos[:1]
    return in_infos[:1]


def _scaled_operand(in_infos: list[TensorInfo], out: TensorInfo, hint: Any) -> TensorInfo | None:
    """The data operand of a multiplication or division by a scale (a Python number, a 0-d tensor, a
    broadcast or repeated scale holding few independent values), if it is one."""
    if len(in_infos) == 1:
        return in_infos[0]  # times a Python number
    a, b = in_infos[:2]
    elements = hint(out.numel)

    def few(t: TensorInfo) -> bool:
        return hint(t.independent_values) * SCALE_RATIO <= elements

    if few(b) and not few(a):
        return a
    if few(a) and not few(b):
        return b
    return None


def _tensor_bytes(value: Any) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        size = value.numel() * value.element_size()
        return size if isinstance(size, int) else 0
    return 0


def _is_real(tensor: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return not isinstance(tensor, FakeTensor) and tensor.device.type != "meta"


def _concrete(args: tuple, kwargs: dict) -> bool:
    """Whether a factory op's arguments are all plain values (no symbolic sizes)."""
    import torch

    return not any(isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)) for a in leaves((args, kwargs)))


def _plain(value: Any) -> Any:
    """A SymInt as an int when it is one, else its sympy expression; anything else unchanged."""
    if type(value) is int:
        return value  # most sizes of a concrete capture
    import torch

    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        expr = value.node.expr
        if expr.is_number:
            return int(expr) if isinstance(value, torch.SymInt) else (float(expr) if isinstance(value, torch.SymFloat) else bool(expr))
        return expr
    return value


def _plain_tree(value: Any) -> Any:
    return map_leaves(_plain, value)


class _OpFacts:
    """What the recorder needs to know of an op, from its name and schema (the same for every call)."""

    __slots__ = ("name", "packet", "metadata", "replacement", "written", "is_view")

    def __init__(self, func: Any, decompose: Any) -> None:
        self.name = str(func)
        self.packet = self.name.split(".")[1] if self.name.count(".") >= 2 else self.name
        self.metadata = self.name in METADATA_OPS
        self.replacement = decompose(func) if decompose is not None and not self.metadata else None
        schema = getattr(func, "_schema", None)
        arguments = schema.arguments if schema is not None else []
        self.written = [(i, a.name) for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write]
        self.is_view = bool(schema is not None and schema.returns and all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns))


def _on_cpu(func: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict] | None:
    """The call with device arguments naming CUDA moved to the CPU (None when nothing names CUDA);
    func None: the call is a no-op returning args[0] (`x.cuda()`)."""
    import torch

    if not kwargs and func is not torch.Tensor.to and func is not torch.Tensor.cuda:
        return None  # nothing can name a device: the common case, decided before anything is built

    def is_cuda(value: Any) -> bool:
        return (isinstance(value, torch.device) and value.type == "cuda") or (isinstance(value, str) and value.startswith("cuda")) or \
            (isinstance(value, int) and not isinstance(value, bool) and func is torch.Tensor.cuda)

    if func is torch.Tensor.cuda:
        return None, args[:1], {}
    found = any(is_cuda(v) for v in kwargs.values()) or (func is torch.Tensor.to and any(is_cuda(a) for a in args[1:]))
    if not found:
        return None
    kwargs = {k: (torch.device("cpu") if is_cuda(v) else v) for k, v in kwargs.items()}
    if func is torch.Tensor.to:
        args = tuple(torch.device("cpu") if i > 0 and is_cuda(a) else a for i, a in enumerate(args))
    return func, args, kwargs


