"""_lib.py - finds libringfeed and declares the C API of include/ringfeed.h
through ctypes. Internal: the public names live in ringfeed/__init__.py.

Search order (the first that loads wins; every attempt is remembered so a
failure can list them all):
  1. $RINGFEED_LIBRARY (a file path; when set, it is the only candidate: an
     explicit choice must not silently fall back to another build);
  2. beside the package: ringfeed/libringfeed.so[.0] (what `pip install
     ./python` puts there);
  3. where `cmake --install` put the library, relative to the package
     (ringfeed/_install.py, written by the install);
  4. a build tree above the package: <ancestor>/build/libringfeed.so, for use
     from a source checkout;
  5. the system's library path (ctypes.util.find_library, then the soname).
"""

import ctypes
import ctypes.util
import errno
import os
import pathlib

RF_END = 1
RF_ERROR_MSG_BYTES = 512
ENV_VAR = "RINGFEED_LIBRARY"


class Error(OSError):
    """An error reported by the ringfeed engine (or by this binding).

    An OSError: `errno` is the positive errno value (errno.EBADMSG for a
    corrupt shard), `code` the engine's negative one, `message` its text,
    which names the shard, block, offset or URL concerned. Bad options are
    ConfigError (also a ValueError); using a closed loader is LoaderClosed
    (also a ValueError, as reading a closed file is); a forked child using
    its parent's loader is ForkedChildError."""

    def __init__(self, code, message):
        self.code = int(code)
        self.message = str(message)
        super().__init__(-self.code, self.message)

    @property
    def errno_name(self):
        return errno.errorcode.get(-self.code, str(self.code))

    def __str__(self):
        return f"{self.message} [{self.errno_name}]"

    def __reduce__(self):  # crosses process boundaries (DataLoader workers) whole
        return (_rebuild, (type(self).__name__, self.code, self.message))


class ConfigError(Error, ValueError):
    """A bad option name or value (the message names it, and for a misspelt
    name suggests the nearest one)."""


class LoaderClosed(Error, ValueError):
    """The loader was closed (perhaps by another thread while this one
    iterated): no batch comes from it any more."""

    def __init__(self, code=-errno.ECANCELED, message="the loader is closed"):
        super().__init__(code, message)


class ForkedChildError(Error):
    """A loader used in a process other than the one that opened it (a
    forked child: its engine threads stayed in the parent)."""

    def __init__(self, pid, message=None):
        if isinstance(pid, int) and message is None and pid > 0:
            message = (
                f"this loader was opened in process {pid}; a forked child must open its own "
                "(open loaders after the fork, e.g. in a DataLoader worker's iteration)"
            )
            pid = -errno.ECHILD
        super().__init__(pid, message)


def _rebuild(name, code, message):
    cls = {c.__name__: c for c in (Error, ConfigError, LoaderClosed, ForkedChildError)}.get(
        name, Error
    )
    return _make(cls, code, message)


def _make(cls, code, message):
    e = OSError.__new__(cls)
    Error.__init__(e, code, message)
    return e


# The engine's messages name its C calls; from Python the user calls these.
_PYTHON_NAMES = (
    ("rf_config_keys()", "ringfeed.config_keys()"),
    ("only rf_release can free", "only Batch.release() (or dropping the batch and its arrays) can free"),
)


def pythonic(message):
    for c_name, py_name in _PYTHON_NAMES:
        message = message.replace(c_name, py_name)
    return message


def error(code, message):
    """The Error subclass for an engine failure code (and message)."""
    message = pythonic(message)
    if code == -errno.ECHILD:
        return _make(ForkedChildError, code, message)
    if code == -errno.ECANCELED and "closed" in message:
        return _make(LoaderClosed, code, message)
    return Error(code, message)


class LibraryNotFound(Error, OSError):
    """libringfeed could not be loaded; `tried` lists (path, reason) pairs."""

    def __init__(self, tried):
        self.tried = list(tried)
        lines = "\n".join(f"  {p}: {why}" for p, why in self.tried)
        Error.__init__(
            self,
            -errno.ENOENT,
            "libringfeed not found; tried:\n"
            + lines
            + f"\nset {ENV_VAR} to the path of libringfeed.so, or build it "
            "(cmake -S . -B build && cmake --build build)",
        )

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (LibraryNotFound, (self.tried,))


class rf_error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * RF_ERROR_MSG_BYTES)]

    def text(self):
        return self.msg.decode("utf-8", "replace")


class rf_batch_field(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("payload", ctypes.c_void_p),
        ("payload_bytes", ctypes.c_uint64),
        ("offsets", ctypes.c_void_p),
        ("present", ctypes.c_void_p),
    ]


class rf_batch(ctypes.Structure):
    _fields_ = [
        ("records", ctypes.c_uint32),
        ("row_bytes", ctypes.c_uint32),
        ("payload", ctypes.c_void_p),
        ("payload_bytes", ctypes.c_uint64),
        ("offsets", ctypes.c_void_p),
        ("lengths", ctypes.c_void_p),
        ("epoch", ctypes.c_uint64),
        ("index", ctypes.c_uint64),
        ("first_record", ctypes.c_uint64),
        # multi-field samples (the struct only grows at its end)
        ("fields", ctypes.c_uint32),
        ("field", ctypes.POINTER(rf_batch_field)),
        ("keys", ctypes.c_void_p),
        ("key_offsets", ctypes.c_void_p),
        ("shards", ctypes.c_void_p),
    ]


class rf_writer_options(ctypes.Structure):
    _fields_ = [
        ("block_bytes", ctypes.c_uint64),
        ("level", ctypes.c_int),
        ("metadata", ctypes.c_char_p),
        ("threads", ctypes.c_uint32),
    ]


class rf_shard_summary(ctypes.Structure):
    _fields_ = [
        ("file_bytes", ctypes.c_uint64),
        ("records", ctypes.c_uint64),
        ("blocks", ctypes.c_uint32),
        ("decoded_bytes", ctypes.c_uint64),
        ("payload_bytes", ctypes.c_uint64),
    ]


_P = ctypes.c_void_p
_ERR = ctypes.POINTER(rf_error)
_SIGNATURES = {
    # name: (restype, argtypes)
    "rf_config_new": (_P, []),
    "rf_config_free": (None, [_P]),
    "rf_config_set": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, _ERR]),
    "rf_config_add_url": (ctypes.c_int, [_P, ctypes.c_char_p, _ERR]),
    "rf_config_add_source": (ctypes.c_int, [_P, ctypes.c_char_p, _ERR]),
    "rf_config_set_resume": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t, _ERR]),
    "rf_config_keys": (_P, []),
    "rf_open": (_P, [_P, _ERR]),
    "rf_next": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.POINTER(rf_batch)), ctypes.c_int]),
    "rf_release": (None, [_P, ctypes.POINTER(rf_batch)]),
    "rf_state_save": (ctypes.c_int, [_P, _P, ctypes.POINTER(ctypes.c_size_t)]),
    "rf_last_error": (ctypes.c_char_p, [_P]),
    "rf_loader_shard_name": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]),
    "rf_close": (None, [_P]),
    "rf_version": (ctypes.c_char_p, []),
    "rf_stats_json": (ctypes.c_int, [_P, _P, ctypes.c_size_t]),
    "rf_parse_bytes": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64), _ERR]),
    "rf_writer_open": (_P, [ctypes.c_char_p, ctypes.POINTER(rf_writer_options), _ERR]),
    "rf_writer_add": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_size_t, _ERR]),
    "rf_writer_close": (ctypes.c_int, [_P, ctypes.POINTER(rf_shard_summary), _ERR]),
    "rf_writer_abort": (None, [_P]),
}
_REQUIRED = ("rf_config_new", "rf_open", "rf_next", "rf_release", "rf_close", "rf_state_save")


def _candidates():
    """Yields (description, path-or-name) in search order."""
    env = os.environ.get(ENV_VAR)
    if env:
        yield f"${ENV_VAR}", env
        return
    here = pathlib.Path(__file__).resolve().parent
    for name in ("libringfeed.so", "libringfeed.so.0"):
        yield "beside the package", str(here / name)
    try:
        from . import _install

        yield "installed (cmake --install)", os.path.normpath(str(here / _install.LIBRARY))
    except ImportError:
        pass
    for ancestor in here.parents:
        yield "build tree", str(ancestor / "build" / "libringfeed.so")
    found = ctypes.util.find_library("ringfeed")
    if found:
        yield "system (find_library)", found
    yield "system (soname)", "libringfeed.so.0"


def _bind(lib):
    missing = [n for n in _REQUIRED if not hasattr(lib, n)]
    if missing:
        raise OSError("missing symbols: " + ", ".join(missing))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name, None)
        if fn is None:  # optional (e.g. writer in a reader-only build)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def load():
    """Loads and binds libringfeed; raises LibraryNotFound listing every try."""
    tried = []
    for where, path in _candidates():
        is_file = os.sep in path
        if is_file and not os.path.exists(path):
            tried.append((path, f"{where}: no such file"))
            continue
        try:
            lib = ctypes.CDLL(path)
            lib._ringfeed_path = path
            return _bind(lib)
        except OSError as e:
            tried.append((path, f"{where}: {e}"))
    raise LibraryNotFound(tried)


_lib = None


def lib():
    """The loaded library (loaded on first use, so importing never fails)."""
    global _lib
    if _lib is None:
        _lib = load()
    return _lib


def check(rc, err):
    """Raises Error for a negative rc, with the message in rf_error err."""
    if rc < 0:
        raise error(rc, err.text() or os.strerror(-rc))
    return rc


def config_error(rc, text, key):
    """ConfigError for option `key`: the engine's text, naming Python's
    ringfeed.config_keys() instead of the C call, and for an unknown name the
    nearest known ones (difflib)."""
    text = pythonic(text or os.strerror(-rc))
    if "unknown option" in text:
        import difflib

        near = difflib.get_close_matches(key, list(config_keys()), n=3, cutoff=0.6)
        if near:
            text += "; did you mean " + " or ".join(repr(n) for n in near) + "?"
    return _make(ConfigError, rc, text)


def config_error_of(text, value, choices):
    """ConfigError for a binding-level option: text, and the nearest of
    choices to value (difflib)."""
    import difflib

    near = difflib.get_close_matches(value, choices, n=2, cutoff=0.5)
    if near:
        text += "; did you mean " + " or ".join(repr(n) for n in near) + "?"
    return _make(ConfigError, -errno.EINVAL, text)


def config_keys():
    """{name: help} from rf_config_keys()."""
    p = lib().rf_config_keys()
    out = {}
    while p:
        name = ctypes.string_at(p)
        if not name:
            break
        p += len(name) + 1
        text = ctypes.string_at(p)
        p += len(text) + 1
        text = text.decode("utf-8", "replace")
        out[name.decode()] = text[: -len(" (default: )")] if text.endswith(" (default: )") else text
    return out


def no_nul(what, text):
    """text, refused when it holds a NUL: the engine takes C strings, which
    would end there and drop the rest silently (Python's own open() refuses
    such names too)."""
    if "\0" in text:
        # the text itself is not shown: it may be a secret (s3_secret_key=...)
        raise ValueError(f"{what}: embedded null character at index {text.index(chr(0))}")
    return text
