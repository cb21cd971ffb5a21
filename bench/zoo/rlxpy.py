"""A thin ctypes binding of rlx's public C API (include/rlx/onnx.h, executable.h, tensor.h), enough
for the benchmarks to import a model, build executables and time runs inside one Python process,
interleaved with the peers. Errors raise RlxError with rlx's status code name and message."""
import ctypes as C
import os

import numpy as np


class RlxError(RuntimeError):
    pass


def _c_order(a):
    """C-contiguous, keeping rank 0 (np.ascontiguousarray would make it rank 1)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


MODES = {"lazy": 1, "eager": 2, "compiled": 3}
DEVICES = {"cpu": 0, "gpu": 1}


class Rlx:
    def __init__(self, lib_path):
        L = self.lib = C.CDLL(os.path.abspath(lib_path))
        P, S, I64P = C.c_void_p, C.c_char_p, C.POINTER(C.c_int64)
        sigs = {
            "rlx_status_code_of": (C.c_int, [P]), "rlx_status_message": (S, [P]),
            "rlx_status_code_name": (S, [C.c_int]), "rlx_status_free": (None, [P]),
            "rlx_dtype_from_name": (P, [S, C.POINTER(C.c_int)]), "rlx_dtype_name": (S, [C.c_int]),
            "rlx_tensor_wrap": (P, [C.c_int, C.c_int32, I64P, P, C.c_size_t, C.POINTER(P)]),
            "rlx_tensor_free": (None, [P]), "rlx_tensor_dtype": (C.c_int, [P]),
            "rlx_tensor_rank": (C.c_int32, [P]), "rlx_tensor_dims": (I64P, [P]),
            "rlx_tensor_nbytes": (C.c_size_t, [P]), "rlx_tensor_cdata": (P, [P]),
            "rlx_onnx_options_create": (P, [C.POINTER(P)]), "rlx_onnx_options_free": (None, [P]),
            "rlx_onnx_options_set_shape": (P, [P, S, C.c_int32, I64P]),
            "rlx_onnx_options_set_input_value": (P, [P, S, P]),
            "rlx_onnx_import": (P, [S, P, C.POINTER(P)]), "rlx_onnx_model_free": (None, [P]),
            "rlx_onnx_model_graph": (P, [P]), "rlx_onnx_model_set_params": (P, [P, P]),
            "rlx_graph_num_outputs": (C.c_size_t, [P]), "rlx_graph_output_name": (S, [P, C.c_size_t]),
            "rlx_graph_num_nodes": (C.c_size_t, [P]),
            "rlx_executable_create": (P, [P, C.c_int, C.c_int, C.POINTER(P)]),
            "rlx_executable_free": (None, [P]),
            "rlx_executable_run": (P, [P, C.c_size_t, C.POINTER(S), C.POINTER(P), C.c_size_t, C.POINTER(P)]),
            "rlx_executable_set_output_readback": (P, [P, C.c_size_t, C.c_bool]),
            "rlx_executable_bind_device_handle": (P, [P, S, P]),
            "rlx_gpu_available": (C.c_bool, []), "rlx_mlx_version": (S, []),
            "rlx_device_describe": (None, [C.c_int, C.c_char_p, C.c_size_t]),
        }
        for name, (res, args) in sigs.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
        # optional entry points that newer builds have (precision control)
        self.has_precision = hasattr(L, "rlx_executable_set_precision")
        if self.has_precision:
            L.rlx_executable_set_precision.restype, L.rlx_executable_set_precision.argtypes = P, [P, C.c_int]

    def check(self, st):
        if st:
            code = self.lib.rlx_status_code_name(self.lib.rlx_status_code_of(st)).decode()
            msg = self.lib.rlx_status_message(st).decode(errors="replace")
            self.lib.rlx_status_free(st)
            raise RlxError(f"{code}: {msg}")

    def describe(self, device):
        buf = C.create_string_buffer(128)
        self.lib.rlx_device_describe(DEVICES[device], buf, 128)
        return buf.value.decode()

    def wrap(self, arr):
        """A borrowed rlx tensor over a C-contiguous numpy array (keep `arr` alive while used)."""
        dt = C.c_int()
        self.check(self.lib.rlx_dtype_from_name(arr.dtype.name.encode(), C.byref(dt)))
        dims = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
        t = C.c_void_p()
        self.check(self.lib.rlx_tensor_wrap(dt.value, arr.ndim, dims, arr.ctypes.data_as(C.c_void_p) if arr.size else None,
                                            arr.nbytes, C.byref(t)))
        return t

    def to_numpy(self, t):
        L = self.lib
        dtype = np.dtype(L.rlx_dtype_name(L.rlx_tensor_dtype(t)).decode())
        rank = L.rlx_tensor_rank(t)
        dims = tuple(L.rlx_tensor_dims(t)[i] for i in range(rank))
        n = L.rlx_tensor_nbytes(t)
        buf = (C.c_char * n).from_address(L.rlx_tensor_cdata(t)) if n else b""
        return np.frombuffer(bytes(buf), dtype=dtype).reshape(dims)

    def import_onnx(self, path, feeds, with_values=True):
        """Imports `path` with each input's value (as `rlx run` does) or only its shape. Returns a Model."""
        opts, model = C.c_void_p(), C.c_void_p()
        self.check(self.lib.rlx_onnx_options_create(C.byref(opts)))
        arrays = {k: _c_order(v) for k, v in feeds.items()}
        tensors = []
        try:
            for k, v in arrays.items():
                if with_values:
                    tensors.append(self.wrap(v))
                    self.check(self.lib.rlx_onnx_options_set_input_value(opts, k.encode(), tensors[-1]))
                else:
                    dims = (C.c_int64 * max(v.ndim, 1))(*v.shape)
                    self.check(self.lib.rlx_onnx_options_set_shape(opts, k.encode(), v.ndim, dims))
            self.check(self.lib.rlx_onnx_import(os.fsencode(path), opts, C.byref(model)))
        finally:
            for t in tensors:
                self.lib.rlx_tensor_free(t)
            self.lib.rlx_onnx_options_free(opts)
        return Model(self, model)


class Model:
    def __init__(self, rlx, handle):
        self.rlx, self.handle = rlx, handle
        self.graph = rlx.lib.rlx_onnx_model_graph(handle)
        self.num_nodes = rlx.lib.rlx_graph_num_nodes(self.graph)

    def executable(self, mode="lazy", device="cpu", precision=None):
        return Executable(self, mode, device, precision)

    def free(self):
        if self.handle:
            self.rlx.lib.rlx_onnx_model_free(self.handle)
            self.handle = None


class Executable:
    def __init__(self, model, mode, device, precision=None):
        r, L = model.rlx, model.rlx.lib
        self.rlx, self.model = r, model
        self.handle = C.c_void_p()
        r.check(L.rlx_executable_create(model.graph, DEVICES[device], MODES[mode], C.byref(self.handle)))
        if precision is not None:
            if not r.has_precision:
                raise RlxError("this rlx build has no rlx_executable_set_precision")
            r.check(L.rlx_executable_set_precision(self.handle, {"fp32": 0, "tf32": 1}[precision]))
        r.check(L.rlx_onnx_model_set_params(model.handle, self.handle))
        self.n_out = L.rlx_graph_num_outputs(model.graph)
        self.out_names = [L.rlx_graph_output_name(model.graph, i).decode() for i in range(self.n_out)]

    def bind(self, feeds, on_device=False):
        """Wraps the inputs once, so that timed runs measure rlx_executable_run alone; on_device:
        uploads them into device handles instead (rlx_executable_bind_device_handle), so that runs
        pass no inputs and time the computation only."""
        self._arrays = [_c_order(v) for v in feeds.values()]
        self._tensors = [self.rlx.wrap(a) for a in self._arrays]
        if on_device:
            for k, t in zip(feeds, self._tensors):
                self.rlx.check(self.rlx.lib.rlx_executable_bind_device_handle(self.handle, k.encode(), t))
            feeds = {}
        self._names = (C.c_char_p * max(len(feeds), 1))(*[k.encode() for k in feeds])
        self._tptrs = (C.c_void_p * max(len(feeds), 1))(*[t.value for t in self._tensors[:len(feeds)]])
        self._n_in = len(feeds)

    def readback(self, on):
        """Whether runs copy the outputs to the host (off: runs evaluate them on the device only)."""
        for i in range(self.n_out):
            self.rlx.check(self.rlx.lib.rlx_executable_set_output_readback(self.handle, i, on))

    def run(self, fetch=False):
        """One rlx_executable_run on the bound inputs; the outputs as numpy arrays when fetch."""
        outs = (C.c_void_p * self.n_out)()
        self.rlx.check(self.rlx.lib.rlx_executable_run(self.handle, self._n_in, self._names, self._tptrs,
                                                       self.n_out, outs))
        res = [self.rlx.to_numpy(outs[i]) if outs[i] else None for i in range(self.n_out)] if fetch else None
        for i in range(self.n_out):
            if outs[i]:
                self.rlx.lib.rlx_tensor_free(outs[i])
        return res

    def free(self):
        for t in getattr(self, "_tensors", []):
            self.rlx.lib.rlx_tensor_free(t)
        self._tensors = []
        if self.handle:
            self.rlx.lib.rlx_executable_free(self.handle)
            self.handle = None
