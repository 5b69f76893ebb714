"""ringfeed - Python binding of libringfeed, a storage read-ahead engine for
training data (io_uring reads, zstd decode pool, ordered collation, byte
budget).

    import ringfeed
    with ringfeed.Loader("data/manifest.rfm", batch=256, budget="512MiB",
                         seed=7, shuffle=True) as loader:
        for batch in loader:            # ringfeed.Batch, zero-copy
            payload, offsets = batch.payload, batch.offsets
            ...                         # record i = payload[offsets[i]:offsets[i+1]]
            batch.release()             # or let it go out of scope
        ckpt = loader.state_dict()      # exact resume: Loader(..., resume=ckpt)

The library is found beside this package, through $RINGFEED_LIBRARY, in a
build/ folder above it (source checkout), or on the system library path.
ringfeed.torch has the PyTorch IterableDataset.
"""

from ._lib import ConfigError, Error, ForkedChildError, LibraryNotFound, LoaderClosed, config_keys
from ._loader import STATE_VERSION, Batch, Field, Loader
from ._writer import write_manifest, write_shard

__all__ = [
    "Batch",
    "ConfigError",
    "Field",
    "Error",
    "ForkedChildError",
    "LibraryNotFound",
    "Loader",
    "LoaderClosed",
    "STATE_VERSION",
    "config_keys",
    "library_path",
    "library_version",
    "write_manifest",
    "write_shard",
]
__version__ = "0.1.0"


def library_path():
    """The path of the libringfeed that was loaded (loading it if needed)."""
    from . import _lib

    return _lib.lib()._ringfeed_path


def library_version():
    """The version of the libringfeed that was loaded ("0.1.0")."""
    from . import _lib

    return _lib.lib().rf_version().decode()
