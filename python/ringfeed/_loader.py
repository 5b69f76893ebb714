"""_loader.py - Loader and Batch over rf_open / rf_next / rf_release.

Ownership, in one picture:

    numpy array --base--> _View --> Batch --> _Handle (rf_loader *)
                                                 ^
    Loader ------------------------------------- +

Arrays keep their Batch alive, batches keep the engine handle alive, so batch
memory is never freed under a live array and rf_close never runs while a
batch is out. See Batch for the release contract.
"""

from __future__ import annotations

import ctypes
import decimal
import errno
import io
import json
import numbers
import os
import threading
import weakref
from collections import abc
from typing import Iterator, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import Error

STATE_VERSION = 1
SourceDataset = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]
Source = Tuple[SourceDataset, Union[str, float, int]]
"""One source of a mixture: (dataset, weight), the dataset one path, URL,
directory or manifest or a list of them, the weight relative ("0.7", 3)."""
_NEXT_SLICE_MS = 100  # rf_next waits in slices so Ctrl-C and close() get through


class _Handle:
    """One rf_loader *, closed when asked to once no batch is out and no
    rf_next call is in progress (another thread may close while one iterates).

    Every C call goes through here under `lock`, except rf_next's wait (which
    must not hold it): `calls` counts the rf_next calls in progress, and
    rf_close runs only when it is 0, so no call ever starts on, or returns
    into, a closed engine. A forked child (another pid) never touches the
    parent's engine, not even this lock (a parent's thread may have held it
    at the fork): it gets ForkedChildError."""

    def __init__(self, ptr):
        self.lib = _lib.lib()
        self.ptr = ptr
        # Re-entrant: a view's __del__ may run (GC) while this thread holds it.
        self.lock = threading.RLock()
        self.pid = os.getpid()  # a forked child must not touch the parent's engine
        self.out = weakref.WeakValueDictionary()  # id -> Batch taken, not yet returned
        self.out_count = 0
        self.calls = 0  # rf_next calls in progress (lock)
        self.close_wanted = False

    def check_process(self):
        if os.getpid() != self.pid:
            raise _lib.ForkedChildError(self.pid)

    def call(self, fn, *args):
        """fn(ptr, *args) under the lock, on a live engine of this process."""
        self.check_process()
        with self.lock:
            if self.ptr is None or self.close_wanted:
                raise _lib.LoaderClosed()
            return fn(self.ptr, *args)

    def give_back(self, batch):
        """rf_release for batch, once (under the lock: views may die in any thread)."""
        if os.getpid() != self.pid:
            batch._ptr = None
            return
        with self.lock:
            ptr, batch._ptr = batch._ptr, None
            if ptr is None or self.ptr is None:
                return
            self.lib.rf_release(self.ptr, ptr)
            self.out_count -= 1
            self._close_if_done()

    def take(self, timeout_ms):
        """rf_next: a Batch, None on timeout, RF_END at the end; raises on error
        (LoaderClosed once close was asked for, even by another thread)."""
        self.check_process()
        with self.lock:
            if self.ptr is None or self.close_wanted:
                raise _lib.LoaderClosed()
            self.calls += 1
            ptr = self.ptr
        out = ctypes.POINTER(_lib.rf_batch)()
        rc = None
        try:
            rc = self.lib.rf_next(ptr, ctypes.byref(out), timeout_ms)
        finally:
            with self.lock:
                self.calls -= 1
                if self.close_wanted:  # closed meanwhile: the batch goes back
                    if rc == 0 and out:
                        self.lib.rf_release(ptr, out)
                    self._close_if_done()
                    rc = "closed"
                elif rc == 0:
                    batch = Batch(self, out)  # reads the batch while the engine lives
                    self.out_count += 1
                    self.out[id(batch)] = batch
                elif rc is not None and rc < 0 and rc != -errno.ETIMEDOUT:
                    msg = self.lib.rf_last_error(ptr)  # before anyone may close
                    msg = msg.decode("utf-8", "replace") if msg else os.strerror(-rc)
        if rc == "closed":
            raise _lib.LoaderClosed()
        if rc == 0:
            return batch
        if rc == -errno.ETIMEDOUT:
            return None
        if rc == _lib.RF_END:
            return _lib.RF_END
        raise _lib.error(rc, msg)

    def request_close(self):
        """Returns every batch nobody can still read; rf_close once none is out
        and no rf_next is in progress (that call returns LoaderClosed)."""
        if os.getpid() != self.pid:  # the parent's engine is the parent's to close
            self.ptr = None
            return
        for b in list(self.out.values()):
            b.release()
        with self.lock:
            self.close_wanted = True
            self._close_if_done()

    def _close_if_done(self):
        if (
            self.close_wanted
            and self.calls == 0
            and self.out_count == 0
            and self.ptr is not None
            and os.getpid() == self.pid
        ):
            self.lib.rf_close(self.ptr)
            self.ptr = None

    def __del__(self):
        # Every batch holds a reference to its handle: none is out any more.
        if getattr(self, "ptr", None) is not None and os.getpid() == self.pid:
            try:
                self.lib.rf_close(self.ptr)
            except Exception:
                pass
            self.ptr = None


class _View:
    """Exposes one region of a batch through numpy's array interface; holds the
    Batch so the memory outlives every array made from it."""

    __slots__ = ("__array_interface__", "_batch")

    def __init__(self, batch, addr, shape, typestr, writable):
        self._batch = batch
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": typestr,
            "data": (addr, not writable),
        }
        with batch._handle.lock:
            batch._views += 1

    def __del__(self):
        b = self._batch
        with b._handle.lock:
            b._views -= 1
            last = b._views == 0 and b._released
        if last:
            b._give_back()


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a memoryview: a decoder (PIL's
    Image.open) reads the batch's bytes where they are, no copy made first."""

    def __init__(self, view):
        super().__init__()
        self._v = view
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._v)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b):
        n = max(0, min(len(b), len(self._v) - self._pos))
        b[:n] = self._v[self._pos : self._pos + n]
        self._pos += n
        return n


class Field(tuple):
    """One field of a batch of multi-field samples (WebDataset tar, MDS):
    unpacks as (payload, offsets), read-only numpy views of engine memory;
    sample i's field is payload[offsets[i]:offsets[i+1]] when present[i] is
    1. A sample without the field has present[i] == 0 (absent, not empty)."""

    __slots__ = ()

    def __new__(cls, name, payload, offsets, present):
        return super().__new__(cls, (payload, offsets, present, name))

    def __iter__(self):
        return iter(tuple.__getitem__(self, slice(0, 2)))

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return tuple.__getitem__(self, slice(0, 2))[i]

    payload = property(lambda self: tuple.__getitem__(self, 0))
    offsets = property(lambda self: tuple.__getitem__(self, 1))
    present = property(lambda self: tuple.__getitem__(self, 2))
    name = property(lambda self: tuple.__getitem__(self, 3))

    def view(self, i):
        """Sample i's bytes as a memoryview (no copy), or None when absent."""
        if not self.present[i]:
            return None
        return memoryview(self.payload[self.offsets[i] : self.offsets[i + 1]])

    def array(self, dtype):
        """A fixed-size numeric field (an MDS int / float32 column) as one
        numpy array of dtype over the section, one value per sample (no
        copy); ValueError when a sample lacks it or its size is not dtype's."""
        dt = np.dtype(dtype)
        n = len(self.present)
        if not self.present.all() or len(self.payload) != n * dt.itemsize or not (
            np.diff(self.offsets) == dt.itemsize
        ).all():
            raise ValueError(f"field {self.name!r} is not one {dt} per sample")
        return self.payload.view(dt)

    def file(self, i):
        """Sample i's bytes as a read-only binary file (for PIL's
        Image.open, soundfile, ...), reading the batch's memory in place;
        None when absent."""
        v = self.view(i)
        return None if v is None else io.BufferedReader(_ViewFile(v))

    def __repr__(self):
        return f"<ringfeed.Field {self.name!r} {int(self.present.sum())}/{len(self.present)} present>"


class Batch:
    """One collated batch, viewing engine memory without a copy.

    Ragged batches: record i is payload[offsets[i]:offsets[i+1]].
    Padded batches (pad_to=N): `rows` is a [records, N] uint8 array, record i
    is rows[i, :lengths[i]] (zero-filled after it).
    Multi-field samples (.tar, MDS): batch["jpg"] is a Field, unpacking as
    (payload, offsets) views; batch.keys the samples' keys (str);
    batch.field_names the fields every batch of the loader has.

    Release contract:
      * The batch's memory goes back to the loader's byte budget when you call
        release(), when the `with batch:` block ends, or when the Batch is
        garbage collected, whichever comes first.
      * Taking the next batch does NOT release this one: you may hold several
        (the budget must cover them, or the engine waits for one to come back).
      * After release(), reading payload / offsets / lengths / rows raises
        ringfeed.Error.
      * Arrays (and tensors) already taken from the batch stay valid: each
        one keeps the memory alive, so release() only hands it back once the
        last of them is freed. Nothing ever points at returned memory.
    """

    def __init__(self, handle, ptr):
        b = ptr.contents
        self._handle = handle
        self._ptr = ptr
        self._views = 0
        self._released = False
        self._token_dtype = None
        self.records = int(b.records)
        self.row_bytes = int(b.row_bytes)
        self.payload_bytes = int(b.payload_bytes)
        self.epoch = int(b.epoch)
        self.index = int(b.index)
        self.first_record = int(b.first_record)
        self._payload = b.payload
        self._offsets = b.offsets
        self._lengths = b.lengths
        self._fields = {}
        for f in range(int(b.fields)):
            fd = b.field[f]
            self._fields[fd.name.decode("utf-8", "surrogateescape")] = (
                fd.payload,
                int(fd.payload_bytes),
                fd.offsets,
                fd.present,
            )
        self._keys = b.keys
        self._key_offsets = b.key_offsets if b.fields else None
        self._shards = b.shards if b.fields else None

    # -- release -------------------------------------------------------
    def release(self) -> None:
        """Ends access to the batch and returns its memory (now, or when the
        last array taken from it is freed). Idempotent."""
        with self._handle.lock:
            self._released = True
            now = self._views == 0
        if now:
            self._give_back()

    def _give_back(self):
        self._handle.give_back(self)

    @property
    def released(self):
        return self._released

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def __del__(self):
        if getattr(self, "_ptr", None) is not None:
            try:
                self._give_back()
            except Exception:
                pass

    # -- views ---------------------------------------------------------
    def _check(self):
        if self._released:
            raise Error(-errno.EINVAL, f"batch {self.epoch}:{self.index} was released")

    def _array(self, addr, count, typestr, writable=False):
        # The check and the view's count under one lock: a release() from
        # another thread (close() returning the batches) comes before both or
        # after both, never between (which would view returned memory).
        with self._handle.lock:
            self._check()
            if count == 0 or not addr:
                return np.empty(0, dtype=np.dtype(typestr))
            view = _View(self, addr, (count,), typestr, writable)
        return np.asarray(view)

    def payload_array(self, writable: bool = False) -> np.ndarray:
        return self._array(self._payload, self.payload_bytes, "|u1", writable)

    def offsets_array(self, writable: bool = False) -> np.ndarray:
        if self._offsets:
            return self._array(self._offsets, self.records + 1, "<i8", writable)
        self._check()
        if self.row_bytes:
            return np.arange(self.records + 1, dtype=np.int64) * self.row_bytes
        raise Error(-errno.EINVAL, "engine gave a ragged batch without offsets")

    def lengths_array(self, writable: bool = False) -> np.ndarray:
        if self._lengths:
            return self._array(self._lengths, self.records, "<u4", writable)
        return np.diff(self.offsets_array()).astype(np.uint32)  # copy: engine had none

    @property
    def payload(self):
        """uint8 array over the batch bytes (read-only view, no copy)."""
        return self.payload_array()

    @property
    def offsets(self):
        """int64 array of records+1 entries (view): record i spans
        payload[offsets[i]:offsets[i+1]]."""
        return self.offsets_array()

    @property
    def lengths(self):
        """uint32 array of record lengths (view)."""
        return self.lengths_array()

    @property
    def rows(self):
        """Padded batches: uint8 [records, row_bytes] array (view)."""
        if not self.row_bytes:
            raise Error(-errno.EINVAL, "rows: the batch is ragged (set pad_to for rows)")
        return self.payload[: self.records * self.row_bytes].reshape(self.records, self.row_bytes)

    def tokens(self, dtype=None, writable: bool = False) -> np.ndarray:
        """A batch of token windows (seq_len=L) as a [records, L + 1] array
        of the token type (a view, no copy). dtype defaults to the loader's
        token_out, else its token_dtype; a Megatron or llm.c file's own type
        (uint16, int32, uint32) is given here when it was not widened."""
        dtype = dtype or self._token_dtype
        if dtype is None:
            raise Error(-errno.EINVAL, "tokens: name the dtype (or open with token_out=)")
        dt = np.dtype(dtype).newbyteorder("<")
        if self.records == 0:
            return np.empty((0, 0), dtype=dt)
        row = self.payload_bytes // self.records
        if self.row_bytes or row * self.records != self.payload_bytes or row % dt.itemsize:
            raise Error(-errno.EINVAL, "tokens: the records are not windows of one length")
        off = self.offsets_array()
        if not np.array_equal(off, np.arange(self.records + 1, dtype=np.int64) * row):
            raise Error(-errno.EINVAL, "tokens: the records are not windows of one length")
        flat = self.payload_array(writable)
        return flat.view(dt).reshape(self.records, row // dt.itemsize)

    def __len__(self):
        return self.records

    # -- multi-field samples ------------------------------------------
    @property
    def field_names(self):
        """The fields of the batch's samples ([] for single-field records)."""
        return list(self._fields)

    def __getitem__(self, name):
        """Field `name` as a Field: (payload, offsets) views, .present."""
        return self.field(name)

    def field(self, name, writable=False):
        """batch[name], with writable views when asked (as for tensors)."""
        self._check()
        if name not in self._fields:
            raise KeyError(name)
        payload, nbytes, offsets, present = self._fields[name]
        return Field(
            name,
            self._array(payload, nbytes, "|u1", writable),
            self._array(offsets, self.records + 1, "<i8", writable),
            self._array(present, self.records, "|u1", writable),
        )

    def __contains__(self, name):
        return name in self._fields

    @property
    def keys(self):
        """The samples' keys as str (a copy; [] for single-field records)."""
        self._check()
        if self._key_offsets is None:
            return []
        off = self._array(self._key_offsets, self.records + 1, "<i8").tolist()
        raw = self._array(self._keys, off[-1], "|u1").tobytes() if off[-1] else b""
        return [raw[off[i] : off[i + 1]].decode("utf-8", "surrogateescape") for i in range(self.records)]

    def shard_of(self, i):
        """The name of the shard record i came from (redacted as messages show
        it), or None where the batch does not say (single-field records)."""
        self._check()
        if not 0 <= i < self.records:
            raise IndexError(i)
        if not self._shards:
            return None
        idx = int(self._array(self._shards, self.records, "<u4")[i])
        h = self._handle
        fn = getattr(h.lib, "rf_loader_shard_name", None)
        if fn is None:
            return None
        buf = ctypes.create_string_buffer(1024)
        with h.lock:
            if h.ptr is None or fn(h.ptr, idx, buf, len(buf)) != 0:
                return None
        return buf.value.decode("utf-8", "surrogateescape")

    def record(self, i):
        """Record i as bytes (a copy)."""
        if not 0 <= i < self.records:
            raise IndexError(i)
        if self.row_bytes:
            return self.rows[i, : int(self.lengths[i])].tobytes()
        off = self.offsets
        return self.payload[off[i] : off[i + 1]].tobytes()

    def records_bytes(self):
        """Every record as a list of bytes (copies)."""
        if self.row_bytes:
            rows, lens = self.rows, self.lengths
            return [rows[i, : int(lens[i])].tobytes() for i in range(self.records)]
        data = self.payload.tobytes()
        off = self.offsets.tolist()
        return [data[off[i] : off[i + 1]] for i in range(self.records)]

    def __repr__(self):
        state = "released" if self._released else "held"
        kind = f"padded {self.row_bytes}" if self.row_bytes else "ragged"
        return (
            f"<ringfeed.Batch epoch={self.epoch} index={self.index} records={self.records} "
            f"{kind} {self.payload_bytes} bytes {state}>"
        )


def _config_value(key, value):
    _lib.no_nul("ringfeed: option name", key)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return _lib.no_nul(f"ringfeed option {key}", value)
    if isinstance(value, os.PathLike):
        return _lib.no_nul(f"ringfeed option {key}", os.fsdecode(os.fspath(value)))
    raise TypeError(f"ringfeed option {key}: cannot pass a {type(value).__name__}")


def _urls(urls):
    if isinstance(urls, (str, bytes, os.PathLike)):
        urls = [urls]
    out = [_lib.no_nul("ringfeed: URL", os.fsdecode(u) if not isinstance(u, str) else u)
           for u in urls]
    if not out:
        raise ValueError("ringfeed.Loader: no shard URL given")
    return out


WEIGHT_PLACES_MAX = 6  # the engine reads weights as exact decimals, in millionths


def _weight_error(text):
    return _lib._make(_lib.ConfigError, -errno.EINVAL, text)


def _weight_text(i, weight):
    """Source i's weight as the plain decimal the engine parses: a str as
    given (the engine checks it), an int as its digits, a float by its
    shortest repr (0.7 -> "0.7"), never in exponent form; more than 6
    decimal places, a negative, NaN or infinite weight is refused here,
    naming the source."""
    what = f"sources[{i}]'s weight {weight!r}"
    if isinstance(weight, str):
        return _lib.no_nul(f"ringfeed: sources[{i}]'s weight", weight)
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise TypeError(f"{what}: a weight is a number or a str such as '0.25', "
                        f"not a {type(weight).__name__}")
    if isinstance(weight, numbers.Integral):
        d = decimal.Decimal(int(weight))
    else:
        text = repr(weight) if type(weight) is float else str(weight)
        try:
            d = decimal.Decimal(text)
        except decimal.InvalidOperation:
            d = decimal.Decimal(repr(float(weight)))
    if not d.is_finite():
        raise _weight_error(f"{what}: not a finite number")
    if d < 0:
        raise _weight_error(f"{what}: a weight is 0 or more")
    if d != 0 and d.as_tuple().exponent < -WEIGHT_PLACES_MAX:
        raise _weight_error(
            f"{what}: more than {WEIGHT_PLACES_MAX} decimal places (the engine takes "
            f"weights as exact decimals, to millionths); round it, e.g. "
            f"round(w, {WEIGHT_PLACES_MAX}), or give it as a str")
    return format(d.normalize() if d != 0 else decimal.Decimal(0), "f")


def _sources(sources):
    """[(weight text, [url, ...]), ...] from [(dataset, weight), ...], a
    dataset being one path/URL/manifest or a list of them."""
    if isinstance(sources, (str, bytes, os.PathLike)) or not isinstance(sources, abc.Sequence):
        raise TypeError(
            "sources= is a list of (dataset, weight) pairs, e.g. "
            "[('data/a', 0.7), ('s3://b/', '0.3')]"
        )
    if not sources:
        raise ValueError("ringfeed: sources= is empty (a mixture needs at least one source)")
    out = []
    for i, src in enumerate(sources):
        if isinstance(src, (str, bytes, os.PathLike)) or not isinstance(src, abc.Sequence) or (
            len(src) != 2
        ):
            raise TypeError(f"sources[{i}]: expected a (dataset, weight) pair, got {src!r}")
        dataset, weight = src
        try:
            urls = _urls(dataset)
        except ValueError:
            raise ValueError(f"sources[{i}]: its dataset is an empty list of URLs") from None
        except TypeError:
            raise TypeError(
                f"sources[{i}]: the dataset is a path/URL or a list of them, not "
                f"{type(dataset).__name__}"
            ) from None
        out.append((_weight_text(i, weight), urls))
    return out


def _data_args(urls, sources, options):
    """(urls, sources) checked: exactly one of urls, sources= and the
    mixture= option says what is read."""
    given = [n for n, v in (("urls", urls), ("sources=", sources),
                            ("mixture=", options.get("mixture"))) if v is not None]
    if len(given) > 1:
        raise ValueError(f"ringfeed: give one of urls, sources= and mixture=, not {' and '.join(given)}")
    if not given:
        raise ValueError("ringfeed: no data given (urls, sources= or mixture=)")
    return (_urls(urls) if urls is not None else None,
            _sources(sources) if sources is not None else None)


class Loader:
    """An iterator of Batch objects read by the ringfeed engine.

    Loader(urls, budget="256MiB", batch=64, seed=1, shuffle=True, ...):
    urls is one path/URL/manifest (str or PathLike) or a list of them; every
    keyword becomes an engine option (rf_config_set) with its value as text
    (booleans as 1/0, None leaves the engine default). The engine checks names
    and values: a bad one raises ringfeed.Error with its message.

    A mixture reads several datasets as one weighted stream:
    Loader(sources=[("data/a", 0.7), (["s3://b/x.rfs", "s3://b/y.rfs"], "0.3")],
    ...) (each source a dataset as urls is, with a relative weight: a str
    such as "0.25" or a number, at most 6 decimal places), or
    Loader(mixture="mix.txt") (a mixture file, docs/format.md). Give one of
    urls, sources= and mixture=. After any n samples each source has given
    within 1 of its share; a small source repeats (a fresh order each pass),
    a large one continues where it stopped in the next epoch
    (mix_samples=, mix_stop= say the epoch's size and end).

    The loader opens at construction (a missing shard fails here) and is a
    single stream: iterating after the end yields nothing. See Batch for when
    batch memory goes back to the budget."""

    def __init__(
        self,
        urls: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
        resume: dict | bytes | None = None,
        *,
        sources: Sequence[Source] | None = None,
        **options: int | float | str | bool | os.PathLike | None,
    ) -> None:
        self._urls, self._sources = _data_args(urls, sources, options)
        self._options = {}
        for k, v in options.items():
            if v is not None:
                self._options[k] = _config_value(k, v)
        self._token_dtype = options.get("token_out") or options.get("token_dtype")
        self._handle = None
        self._ended = False
        self._closed = False
        self._last_state = None
        self._open(self._decode_state(resume) if resume is not None else None)

    # -- lifetime ------------------------------------------------------
    def _config(self, state):
        lib = _lib.lib()
        cfg = lib.rf_config_new()
        if not cfg:
            raise MemoryError("rf_config_new")
        err = _lib.rf_error()
        try:
            for k, v in self._options.items():
                rc = lib.rf_config_set(cfg, k.encode(), v.encode(), err)
                if rc < 0:
                    raise _lib.config_error(rc, err.text(), k)
            for u in self._urls or ():
                _lib.check(lib.rf_config_add_url(cfg, os.fsencode(u), err), err)
            add_source = getattr(lib, "rf_config_add_source", None) if self._sources else None
            if self._sources and add_source is None:
                raise Error(-errno.ENOSYS, f"sources=: {lib._ringfeed_path} predates mixtures "
                            "(no rf_config_add_source)")
            for i, (weight, urls) in enumerate(self._sources or ()):
                rc = add_source(cfg, weight.encode(), err)
                if rc < 0:
                    raise _lib.config_error(rc, f"sources[{i}]: {err.text()}", "sources")
                for u in urls:
                    _lib.check(lib.rf_config_add_url(cfg, os.fsencode(u), err), err)
            if state is not None:
                _lib.check(lib.rf_config_set_resume(cfg, state, len(state), err), err)
        except BaseException:
            lib.rf_config_free(cfg)
            raise
        return cfg

    def _open(self, state):
        lib = _lib.lib()
        cfg = self._config(state)
        err = _lib.rf_error()
        try:
            ptr = lib.rf_open(cfg, err)
        finally:
            lib.rf_config_free(cfg)
        if not ptr:
            raise _lib.error(err.code or -errno.EIO, err.text() or "rf_open failed")
        self._handle = _Handle(ptr)
        self._ended = False

    def close(self) -> None:
        """Stops the engine. Batches nobody reads any more are returned at
        once; rf_close runs when the last array from the last batch is gone."""
        h, self._handle = self._handle, None
        if h is not None:
            try:
                self._last_state = self._save_of(h)
            except Error:
                pass
            h.request_close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            if getattr(self, "_handle", None) is not None:
                self.close()
        except Exception:
            pass

    @property
    def closed(self):
        return self._closed

    @property
    def batches_out(self):
        """Batches taken and not yet returned to the engine."""
        return self._handle.out_count if self._handle is not None else 0

    # -- iteration -----------------------------------------------------
    def __iter__(self):
        return self

    def __next__(self) -> Batch:
        b = self._take(-1)
        if b is None:  # cannot happen with an unbounded wait
            raise Error(-errno.ETIMEDOUT, "rf_next timed out")
        return b

    def next(self, timeout_ms: int = -1) -> Batch | None:
        """Like next(loader), with a bound: None when no batch came within
        timeout_ms (-1 waits forever); StopIteration at the end."""
        return self._take(int(timeout_ms))

    def _take(self, timeout_ms):
        h = self._handle
        if self._ended:
            raise StopIteration
        if h is None:
            raise _lib.LoaderClosed()
        # Wait in slices so Ctrl-C is seen (ctypes drops the GIL inside rf_next).
        while True:
            step = _NEXT_SLICE_MS if timeout_ms < 0 else min(timeout_ms, _NEXT_SLICE_MS)
            got = h.take(step)
            if got is not None:
                break
            if timeout_ms >= 0:
                timeout_ms -= step
                if timeout_ms <= 0:
                    return None
        if not isinstance(got, Batch):  # RF_END
            self._ended = True
            raise StopIteration
        got._token_dtype = self._token_dtype
        return got

    def records(self) -> Iterator[bytes]:
        """Yields every record as bytes (copies), releasing each batch."""
        for b in self:
            with b:
                yield from b.records_bytes()
            del b

    # -- state and stats -----------------------------------------------
    def _save(self):
        if self._handle is None:
            raise _lib.LoaderClosed()
        return self._save_of(self._handle)

    @staticmethod
    def _save_of(h):
        def save(ptr):
            n = ctypes.c_size_t(0)
            rc = h.lib.rf_state_save(ptr, None, ctypes.byref(n))
            buf = ctypes.create_string_buffer(max(n.value, 1)) if rc >= 0 else None
            if rc >= 0:
                rc = h.lib.rf_state_save(ptr, buf, ctypes.byref(n))
            if rc < 0:
                raise _lib.error(rc, (h.lib.rf_last_error(ptr) or b"rf_state_save").decode())
            return buf.raw[: n.value]

        return h.call(save)

    def state_dict(self) -> dict:
        """The consumer's position (after every batch taken so far) as
        {"version": 1, "state": bytes}; opaque, for load_state_dict or
        Loader(resume=...)."""
        if self._handle is not None:
            state = self._save()
        elif self._last_state is not None:
            state = self._last_state
        else:
            raise Error(-errno.EINVAL, "state_dict: the loader was never opened")
        return {"version": STATE_VERSION, "state": bytes(state)}

    @staticmethod
    def _decode_state(sd):
        if isinstance(sd, (bytes, bytearray, memoryview)):
            return bytes(sd)
        if not isinstance(sd, dict) or "state" not in sd:
            raise ValueError("ringfeed state: expected the dict state_dict() returned")
        if sd.get("version") != STATE_VERSION:
            raise ValueError(
                f"ringfeed state: version {sd.get('version')!r}, this binding reads "
                f"{STATE_VERSION}"
            )
        st = sd["state"]
        if not isinstance(st, (bytes, bytearray, memoryview)):
            # bytes(5) would be five zero bytes, bytes("abc") a TypeError
            raise ValueError(f"ringfeed state: 'state' holds a {type(st).__name__}, "
                             "expected the bytes state_dict() returned")
        return bytes(st)

    def load_state_dict(self, sd: dict | bytes) -> None:
        """Repositions the stream at a saved state: closes the engine (see
        close()) and reopens it resuming there. The engine refuses a state
        saved under another dataset or configuration (ringfeed.Error)."""
        state = self._decode_state(sd)
        if self._handle is not None:
            h, self._handle = self._handle, None
            h.request_close()
        self._closed = False
        self._open(state)

    def stats(self) -> dict:
        """The engine's figures (rf_stats_json) as a dict."""
        h = self._handle
        if h is None:
            raise _lib.LoaderClosed()

        def stats_json(ptr):
            cap = 64 << 10
            while cap <= 16 << 20:
                buf = ctypes.create_string_buffer(cap)
                rc = h.lib.rf_stats_json(ptr, buf, cap)
                if rc >= 0:
                    return buf.raw[:rc]
                if rc != -errno.ENOSPC:
                    msg = h.lib.rf_last_error(ptr) if rc == -errno.ECHILD else None
                    raise _lib.error(rc, msg.decode() if msg else "rf_stats_json failed")
                cap *= 4
            raise _lib.error(-errno.ENOSPC, "rf_stats_json: more than 16 MiB")

        return json.loads(h.call(stats_json).decode("utf-8"))
