"""ringfeed.torch - a PyTorch IterableDataset over the ringfeed engine.

    from ringfeed.torch import RingfeedDataset
    ds = RingfeedDataset("data/manifest.rfm", batch=256, budget="1GiB", seed=7)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    for step, b in enumerate(dl):
        payload, offsets = b["payload"], b["offsets"]   # uint8 [bytes], int64 [n+1]
        ...
        if step % 1000 == 0:
            torch.save({"data": ds.state_dict(), ...}, "ckpt.pt")
    # later: ds.load_state_dict(ckpt["data"]) before iterating resumes exactly.

The engine reads, decodes and collates in its own threads, so use
num_workers=0 (worker processes would each read the whole stream; this
dataset refuses to run inside one) and batch_size=None (batches come
collated: the default batch_size=1 would add a dimension and fail on ragged
batches, so it is refused with a TypeError).

Under torch.distributed every rank yields the same number of batches per
epoch (len(ds), known before the first batch), so collective steps never
wait at an epoch's end; tail="drop" (default) leaves out the records that do
not divide evenly among the ranks, tail="pad" repeats records from the
epoch's start instead, drop_last=True drops each rank's last partial batch.
A state_dict() saved by any rank resumes the whole job, on the same or
another number of ranks (and batch size). skip_blocks=N (skip_records=M)
leaves out up to N undeliverable blocks an epoch instead of stopping (each
skip in stats()["skips"]); batches keep their positions, so ranks keep equal
counts.

Zero copy: the tensors view the engine's batch memory (torch.from_numpy).
Each tensor holds a reference that keeps its batch alive; the batch's bytes go
back to the loader's budget when the last tensor (and any view of it) is
freed. You never need to copy for safety, but while you keep tensors from a
batch its bytes stay out of the budget: keep a few, not thousands (the engine
waits for memory otherwise). Copy (`t.clone()`, `.to(device)`) what you want
to keep longer. Tensors are writable: the engine does not read a batch after
delivering it.
"""

import sys

import torch
import torch.utils.data

from ._loader import Loader

RAGGED_KEYS = ("payload", "offsets")
PADDED_KEYS = ("rows", "lengths")


def _dist_rank_world():
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None, None


class RingfeedDataset(torch.utils.data.IterableDataset):
    """Yields one collated batch per item.

    Ragged (default): {"payload": uint8 tensor, "offsets": int64 tensor of
    records+1 entries}; record i is payload[offsets[i]:offsets[i+1]].
    Padded (pad_to=N): {"rows": uint8 tensor [records, N], "lengths": int64
    tensor [records]}. With as_tuple=True, the same two tensors as a tuple.
    Token windows (seq_len=L, token_out="int64"): one [B, L + 1] tensor
    (inputs x = t[:, :-1], targets y = t[:, 1:]).

    rank / world default to torch.distributed's when it is initialised
    (explicit arguments win). Other keywords are engine options (see
    ringfeed.Loader). Each iteration opens a loader for `epoch` (set_epoch()
    changes it); with epochs=N one iteration spans N epochs.

    state_dict() is the position after the last batch this dataset yielded;
    load_state_dict() makes the next iteration resume exactly there. With
    DataLoader(num_workers=0, pin_memory=False) that is the last batch your
    loop received."""

    def __init__(self, urls, rank=None, world=None, as_tuple=False, tail=None, **options):
        super().__init__()
        drank, dworld = _dist_rank_world()
        self.rank = rank if rank is not None else drank
        self.world = world if world is not None else dworld
        self.urls = urls
        self.options = dict(options)
        if tail is not None:
            if tail not in ("drop", "pad"):
                raise ValueError(f"tail={tail!r}: 'drop' or 'pad'")
            self.options["pad_tail"] = tail == "pad"
        self.as_tuple = as_tuple
        self._loader = None
        self._resume = None
        self._len = None

    def _options_now(self):
        opts = dict(self.options)
        if self.rank is not None:
            opts["rank"] = self.rank
        if self.world is not None:
            opts["world"] = self.world
        return opts

    def __len__(self):
        """Batches this rank yields in one iteration (every rank the same):
        the engine's count, known at open from the shard indexes. With
        epochs=N, all N epochs; endless (epochs=0) has no length."""
        opts = self._options_now()
        epochs = int(opts.get("epochs", 1))
        if epochs == 0:
            raise TypeError("RingfeedDataset with epochs=0 is endless: it has no len()")
        key = (repr(sorted(opts.items())), repr(self._resume))
        if self._len is None or self._len[0] != key:
            with Loader(self.urls, resume=self._resume, **opts) as probe:
                st = probe.stats()
            n = st["epoch_batches"] + (epochs - 1) * st["epoch_batches_later"]
            self._len = (key, n)
        return self._len[1]

    @staticmethod
    def _check_not_auto_batched():
        """A DataLoader with batch_size=N (default 1) would stack N of our
        already-collated batches: refuse, saying what to write."""
        try:
            from torch.utils.data._utils.fetch import _IterableDatasetFetcher
        except ImportError:  # another torch layout: nothing to check against
            return
        f = sys._getframe(2)
        for _ in range(4):
            if f is None:
                break
            fetcher = f.f_locals.get("self")
            if isinstance(fetcher, _IterableDatasetFetcher) and fetcher.auto_collation:
                raise TypeError(
                    "RingfeedDataset yields collated batches: build the DataLoader with "
                    "batch_size=None (batch_size=1, the default, would add a dimension "
                    "to every tensor and fail on ragged batches); the batch size is the "
                    "dataset's batch= option"
                )
            f = f.f_back

    def set_epoch(self, epoch):
        self.options["epoch"] = int(epoch)

    def _open(self):
        info = torch.utils.data.get_worker_info()
        if info is not None:
            raise RuntimeError(
                "RingfeedDataset runs in the main process: use DataLoader(num_workers=0); "
                "the engine reads and decodes in its own threads"
            )
        if self._loader is not None:
            self._loader.close()
        opts = self._options_now()
        resume, self._resume = self._resume, None
        self._loader = Loader(self.urls, resume=resume, **opts)
        return self._loader

    def _fields_item(self, batch):
        """Multi-field samples: {"__key__": [str], FIELD: (payload, offsets,
        present) tensors} per field of the dataset."""
        out = {"__key__": batch.keys}
        for name in batch.field_names:
            f = batch.field(name, writable=True)
            out[name] = (
                torch.from_numpy(f.payload),
                torch.from_numpy(f.offsets),
                torch.from_numpy(f.present.astype("bool")),
            )
        batch.release()
        return out

    def _item(self, batch):
        """The batch's tensors; releases the batch, so from here on only the
        tensors keep its memory out of the budget."""
        if batch.field_names:
            return self._fields_item(batch)
        if self.options.get("seq_len"):
            # windows: one dense [B, L + 1] tensor of the token type, no copy
            arr = batch.tokens(writable=True)
            if arr.dtype.kind == "u" and arr.dtype.itemsize > 1:
                raise TypeError(
                    f"torch has no {arr.dtype.name} tensors: open with token_out='int64' "
                    "(or 'int32'), which widens the tokens in the engine's decode copy"
                )
            out = torch.from_numpy(arr)
            batch.release()
            return out
        if batch.row_bytes:
            rows = torch.from_numpy(batch.payload_array(writable=True))
            rows = rows[: batch.records * batch.row_bytes].view(batch.records, batch.row_bytes)
            lengths = torch.from_numpy(batch.lengths_array().astype("int64"))
            out = (rows, lengths)
            keys = PADDED_KEYS
        else:
            payload = torch.from_numpy(batch.payload_array(writable=True))
            offsets = torch.from_numpy(batch.offsets_array(writable=True))
            out = (payload, offsets)
            keys = RAGGED_KEYS
        batch.release()
        return out if self.as_tuple else dict(zip(keys, out))

    def __iter__(self):
        self._check_not_auto_batched()
        loader = self._open()
        for batch in loader:
            # No local keeps the item: while suspended here, the generator
            # must not hold the consumer's previous batch.
            yield self._item(batch)

    def state_dict(self):
        """{"version", "state"}: the position after the last batch yielded
        (or the pending resume point when nothing was iterated since)."""
        if self._resume is not None:
            return dict(self._resume)
        if self._loader is None:
            return None
        return self._loader.state_dict()

    def load_state_dict(self, sd):
        """Resume there on the next iteration (None: start afresh)."""
        if sd is not None:
            Loader._decode_state(sd)  # check the version now, not at iteration
            sd = dict(sd)
        self._resume = sd
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def stats(self):
        return self._loader.stats() if self._loader is not None else None

    def close(self):
        if self._loader is not None:
            self._loader.close()
            self._loader = None
