"""Compilation policy shared by every kernel: flags, twins, serial or threaded.

Every tile kernel exists twice, compiled from one source: ``parallel=True``
(threads over anchors, used in-process on large work) and serial (inside dask
tasks, where dask already runs one task per core, and on small work, where
waking a thread pool costs more than it saves).  :func:`pick` is the one rule
that chooses between them.
"""

import contextlib
import functools
import hashlib
import os
import sys
import threading
import types
from dataclasses import dataclass

import numba
from numba.core import caching

# Reassociation lets LLVM vectorise the candidate loops; no 'nnan'/'ninf':
# -inf is a legitimate running maximum and a masked logit here.
FASTMATH = {"reassoc", "contract", "arcp"}
# exp(x) for x below this is under 1e-304: such a probability cannot change a
# double-precision sum whose largest term is 1, and as a subnormal it would
# slow every later multiplication by two orders of magnitude.  Set to 0.
EXP_FLOOR = -700.0

#: Below this much work (in pair-features, the inner step of the Relief
#: kernels) one thread beats waking a pool.  Kernel families whose inner step
#: costs more or less say so with ``cost`` in :func:`pick`.
PARALLEL_MIN_WORK = 5e7

_ENGINE = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=1)
def engine_sources_hash() -> str:
    """A hash of every engine source file (this package's ``.py`` files)."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(_ENGINE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(root, name)
            digest.update(os.path.relpath(path, _ENGINE).encode())
            with open(path, "rb") as fh:
                digest.update(fh.read())
    return digest.hexdigest()


class EngineCacheLocator(caching._CacheLocator):
    """Numba's on-disk cache for engine kernels, stamped by every engine source.

    Numba keys a cached kernel by its own file only, while a kernel's
    machine code also holds the constants and inlined helpers it takes from
    other files (``EXP_FLOOR`` here, the distance helpers): after a change
    to one of those alone, numba would load the old code.  This locator
    keeps numba's own place for the cache and adds the hash of all engine
    sources to the stamp, so any change to the engine recompiles its kernels.
    """

    def __init__(self, inner):
        self._inner = inner

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_source_stamp(self):
        return self._inner.get_source_stamp(), engine_sources_hash()

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    @property
    def _py_file(self):
        # Where numba points its warning about a kernel it cannot cache.
        return self._inner._py_file

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(_ENGINE + os.sep):
            return None
        for other in _IMPL._locator_classes:
            if other is not cls:
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None


# Before any kernel below or in the kernel modules is decorated (the locator
# is chosen when ``cache=True`` is).
_IMPL = getattr(caching, "CacheImpl", None) or caching._CacheImpl
if EngineCacheLocator not in _IMPL._locator_classes:
    _IMPL._locator_classes.insert(0, EngineCacheLocator)

helper = numba.njit(fastmath=FASTMATH, cache=True, nogil=True)
# Helpers inlined into their callers as numba IR: compiled on their own, each
# would be optimised and turned into machine code once by itself and again in
# every caller that links it, most of a first fit's compilation time.  Inlined
# code takes its caller's flags, so only helpers whose callers all use
# FASTMATH, or that do no floating-point arithmetic, are inlined.
inline = numba.njit(fastmath=FASTMATH, cache=True, nogil=True, inline="always")
# Helpers that hold a tile's inner loops, compiled without numba's reference
# counts: with them, every array view made in a loop, and every array handed to
# an inlined helper there, costs an atomic increment and decrement that LLVM
# cannot always drop (the k-nearest tiles ran 1.5-1.8x slower).  They allocate
# nothing: their callers pass the scratch arrays.
bare = numba.njit(fastmath=FASTMATH, cache=True, nogil=True, _nrt=False)
#: Kernels whose arithmetic must not be reassociated (exact sums, solvers).
#: ``fastmath=False`` said, not left unset: numba compiles a callee whose
#: option is unset with its caller's, so a fast-math kernel calling it first
#: would make it a fast-math function for every later caller.
strict = numba.njit(cache=True, nogil=True, fastmath=False)


def restore_numpy_aliases():
    """Put back ``np.row_stack`` (an alias of ``np.vstack``) where numpy 2.5 removed
    it: numba-cuda 0.30 registers an overload of it when ``numba.cuda`` is
    imported and fails without it (NVIDIA/numba-cuda#907).  Called before every
    import of ``numba.cuda``."""
    import numpy as np

    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def twins(fn, fastmath=True):
    """Compile ``fn`` twice: ``(serial, parallel)``.

    The parallel twin is a renamed copy of the function: numba's on-disk
    cache is keyed by qualified name, and both must not share one entry.
    """
    flags = {"fastmath": FASTMATH} if fastmath else {}
    serial = numba.njit(cache=True, nogil=True, **flags)(fn)
    twin = types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__ + "_parallel", fn.__defaults__, fn.__closure__
    )
    twin.__qualname__ = fn.__qualname__ + "_parallel"
    twin.__doc__ = fn.__doc__
    parallel = numba.njit(cache=True, parallel=True, **flags)(twin)
    return serial, parallel


@dataclass(frozen=True, eq=False)
class TileKernel:
    """A tile kernel as its statistic receives it: nothing to register.

    ``serial`` and ``threaded`` are its twins (:func:`twins`; one function
    twice for a kernel that never threads inside).  ``cost``: one of its
    steps (a pair-feature, for the pairwise kernels) relative to one of the
    soft-neighbour tile, read by :func:`pick`; ``speed``: how many times
    faster a step runs than the soft tile's, so that a call of it may hold
    that many more steps between checks for a stop; ``blas``: the kernel's
    products are BLAS calls and it threads over tasks, not inside (one BLAS
    thread a task).  A task of the graph carries the object itself: its key
    hashes the kernel's module and name, and it pickles by reference.
    ``partial``: the named tuple the kernel's tuple of arrays is read as
    (defined beside the kernel), or ``None`` for a kernel returning one array.
    """

    serial: object
    threaded: object
    cost: float = 1.0
    speed: float = 1.0
    blas: bool = False
    partial: object = None

    @classmethod
    def compile(cls, fn, fastmath=True, **how):
        """Both twins of ``fn`` (:func:`twins`) as a :class:`TileKernel`."""
        return cls(*twins(fn, fastmath), **how)

    @property
    def source(self):
        """``(module, name)`` of the function the kernel was compiled from."""
        fn = getattr(self.serial, "py_func", self.serial)
        return fn.__module__, fn.__qualname__

    def pick(self, work, threads=True):
        """The twin for ``work`` steps (:func:`pick`)."""
        return pick((self.serial, self.threaded), work, self.cost, threads)

    def is_threaded(self, kernel):
        """Whether ``kernel`` (a twin :meth:`pick` gave) is the threaded one."""
        return kernel is self.threaded and self.threaded is not self.serial

    def __dask_tokenize__(self):
        serial = _identity(self.serial)
        # The threaded twin is compiled from the serial one's code: named by it.
        twin = getattr(self.threaded, "py_func", self.threaded)
        same_code = getattr(twin, "__code__", None) is getattr(
            getattr(self.serial, "py_func", self.serial), "__code__", False
        )
        threaded = ("twin", serial) if same_code else _identity(self.threaded)
        partial = None if self.partial is None else _identity(self.partial)
        return ("TileKernel", serial, threaded, self.cost, self.speed, self.blas, partial)

    def __reduce__(self):
        module = sys.modules.get(self.source[0])
        for name, value in vars(module or object()).items():
            if value is self:
                return _kernel_named, (self.source[0], name)
        return TileKernel, (
            self.serial,
            self.threaded,
            self.cost,
            self.speed,
            self.blas,
            self.partial,
        )


def _identity(obj):
    """``(module, qualified name)`` of a function or class importable by that name, else
    a hash of it by value (a closure by its code and cells)."""
    base = getattr(obj, "py_func", obj)
    module, name = getattr(base, "__module__", None), getattr(base, "__qualname__", "")
    found = sys.modules.get(module)
    for part in name.split("."):
        found = getattr(found, part, None)
    if found is base or found is obj:
        return module, name
    import cloudpickle

    return hashlib.sha256(cloudpickle.dumps(base)).hexdigest()


def _kernel_named(module, name):
    import importlib

    return getattr(importlib.import_module(module), name)


def use_threads(work, cost=1.0):
    """Whether ``work`` steps of relative ``cost`` pay for waking a thread pool.

    Never on one thread: the threaded twin would run the serial loop, after
    compiling itself on the first large fit of a process.
    """
    return work * cost >= PARALLEL_MIN_WORK and numba.get_num_threads() > 1


def pick(kernel_twins, work, cost=1.0, threads=True):
    """The serial or the threaded twin for ``work`` steps of relative ``cost``.

    ``threads=False`` (inside a dask task, or when the caller runs tiles on
    threads itself) always gives the serial twin.
    """
    serial, parallel = kernel_twins
    return parallel if threads and use_threads(work, cost) else serial


def n_threads():
    return numba.get_num_threads()


def set_threads(n):
    """Use ``n`` numba threads on this thread (numba's setting is per thread)."""
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)


@functools.lru_cache(maxsize=1)
def _threadpool_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # finding the libraries once is the slow part


# One BLAS limit for the whole process, counted: the kernels of several threads share
# OpenBLAS's one thread pool, so the first to enter sets it and the last to leave restores.
_BLAS_LOCK = threading.Lock()
_BLAS_LIMIT = {"users": 0, "limiter": None}


def _release_blas_control():
    """Let any thread set OpenBLAS's threads.  threadpoolctl (>= 3.8) gives a pthreads
    OpenBLAS to the first Python thread that limits it and silently ignores every
    other thread's limit, so a limit the user took on the main thread would leave
    the kernels' BLAS calls threaded on top of the kernels' own threads."""
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@contextlib.contextmanager
def blas_single_thread():
    """One BLAS thread while kernels that call BLAS run (their threads are the
    parallelism), whichever thread asks and whatever limit the user holds; the
    user's limit is back when the last kernel is done."""
    with _BLAS_LOCK:
        if _BLAS_LIMIT["users"] == 0:
            _release_blas_control()
            _BLAS_LIMIT["limiter"] = _threadpool_controller().limit(limits=1, user_api="blas")
        _BLAS_LIMIT["users"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_LIMIT["users"] -= 1
            if _BLAS_LIMIT["users"] == 0:
                _release_blas_control()
                _BLAS_LIMIT["limiter"].restore_original_limits()
                _BLAS_LIMIT["limiter"] = None
                _release_blas_control()  # control goes back to whoever limits next
