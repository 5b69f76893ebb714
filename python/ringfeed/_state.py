"""_state.py - the engine's resume state (engine/state.h, versions 3 and 2) read and
written in Python, for DataLoader workers: a state of W x N virtual ranks
whose positions differ (worker w received one batch more than worker w + 1)
is kept as each virtual rank's remaining records, as segments of the epoch's
global stream, and handed to an engine as a world-1 state whose sequence is
those segments (the engine's own elastic resume reads such a state). A mixture's state
(flag 8) carries its identity after the segments (u32 sources, u32
stop_first, u64 samples an epoch, per source u64 shape hash, records a pass,
weight), and with flag 16 the weight change a resume made (mix_rebase.h:
u64 epoch, u64 that epoch's samples, u32 ranges, per source u64 tail, u32
ranges, u32 window, then the ranges): kept as bytes and written back
unchanged, so a mixture's worker states are its own (the segments are of
the mixture stream).

The split and the remaining records follow engine/state.c
(rf_state_remaining) and the partition of docs/design.md: of a sequence of L
records, virtual rank v of V takes positions [v*S, (v+1)*S), S = L // V
(pad: ceil, positions past L wrapping to the start)."""

import struct

# version 3 (what the engine writes) adds the dataset's names and contents
# hashes after version 2's 92-byte head; a state is written back in its own
# version, its identity carried unchanged
MAGICS = {2: b"RFSTATE2", 3: b"RFSTATE3"}
HEADS = {2: 92, 3: 108}
FLAG_SHUFFLE, FLAG_PAD, FLAG_SEQ, FLAG_MIX, FLAG_REBASE = 1, 2, 4, 8, 16
SEGMENTS_MAX = 4096
MIX_SOURCES_MAX = 4096

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class State:
    """A decoded engine state (the fields of engine/state.h)."""

    __slots__ = ("version", "flags", "dataset_hash", "dataset_records", "shards", "window",
                 "seed", "world", "epoch", "record", "batch", "skipped", "skipped_blocks",
                 "names_hash", "content_hash", "segs", "mix")

    @classmethod
    def decode(cls, buf):
        buf = bytes(buf)
        version = next((v for v, m in MAGICS.items() if buf[:8] == m), None)
        if version is None or len(buf) < HEADS[version] + 4:
            raise ValueError("ringfeed state: not a version 2 or 3 engine state")
        head = HEADS[version]
        (crc,) = struct.unpack_from("<I", buf, len(buf) - 4)
        if crc32c(buf[:-4]) != crc:
            raise ValueError("ringfeed state: checksum mismatch")
        s = cls()
        s.version = version
        (stored, s.flags, s.dataset_hash, s.dataset_records, s.shards, s.window, s.seed,
         s.world, nsegs, s.epoch, s.record, s.batch, s.skipped,
         s.skipped_blocks) = struct.unpack_from("<IIQQIIQIIQQQQI", buf, 8)
        if stored != version:
            raise ValueError(f"ringfeed state: version {stored} under magic {buf[:8]!r}")
        s.names_hash, s.content_hash = (struct.unpack_from("<QQ", buf, 92) if version >= 3
                                        else (0, 0))
        at = head + 16 * nsegs
        mix_bytes = 0
        if version >= 3 and s.flags & FLAG_MIX:
            if len(buf) < at + 16 + 4:
                raise ValueError(f"ringfeed state: {len(buf)} bytes do not hold {nsegs} "
                                 "segments and a mixture")
            (sources,) = struct.unpack_from("<I", buf, at)
            if not 0 < sources <= MIX_SOURCES_MAX:
                raise ValueError(f"ringfeed state: a mixture of {sources} sources")
            mix_bytes = 16 + 24 * sources
            if s.flags & FLAG_REBASE:
                if len(buf) < at + mix_bytes + 20 + 4:
                    raise ValueError("ringfeed state: its mixture weight change is cut short")
                (nranges,) = struct.unpack_from("<I", buf, at + mix_bytes + 16)
                mix_bytes += 20 + 16 * sources + 16 * nranges
        if len(buf) != at + mix_bytes + 4:
            raise ValueError(f"ringfeed state: {len(buf)} bytes do not hold {nsegs} segments"
                             + (" and its mixture" if mix_bytes else ""))
        s.segs = [struct.unpack_from("<QQ", buf, head + 16 * i) for i in range(nsegs)]
        s.mix = buf[at:at + mix_bytes]
        return s

    def mix_weights(self):
        """A mixture's weights in millionths, per source ([] for one dataset)."""
        if not self.flags & FLAG_MIX or not self.mix:
            return []
        (sources,) = struct.unpack_from("<I", self.mix, 0)
        return [struct.unpack_from("<Q", self.mix, 16 + 24 * i + 16)[0] for i in range(sources)]

    def rebase(self):
        """(epoch, samples of that epoch) of the weight change this mixture
        state carries, or None."""
        if not self.flags & FLAG_REBASE:
            return None
        (sources,) = struct.unpack_from("<I", self.mix, 0)
        return struct.unpack_from("<QQ", self.mix, 16 + 24 * sources)

    @property
    def pad(self):
        return bool(self.flags & FLAG_PAD)

    def sequence(self):
        """The epoch's sequence as global segments."""
        return list(self.segs) if self.flags & FLAG_SEQ else [(0, self.dataset_records)]

    def encode(self):
        nsegs = len(self.segs) if self.flags & FLAG_SEQ else 0
        if nsegs > SEGMENTS_MAX:
            raise ValueError(
                f"ringfeed state: {nsegs} stream segments, more than {SEGMENTS_MAX} "
                "(resume on the same world and workers first)")
        head = struct.pack("<8sIIQQIIQIIQQQQI", MAGICS[self.version], self.version, self.flags,
                           self.dataset_hash, self.dataset_records, self.shards, self.window,
                           self.seed, self.world, nsegs, self.epoch, self.record, self.batch,
                           self.skipped, self.skipped_blocks)
        if self.version >= 3:
            head += struct.pack("<QQ", self.names_hash, self.content_hash)
        body = head + b"".join(struct.pack("<QQ", a, n) for a, n in self.segs[:nsegs])
        body += self.mix if self.flags & FLAG_MIX else b""
        return body + struct.pack("<I", crc32c(body))


def seq_length(segs):
    return sum(n for _, n in segs)


def seq_range(segs, start, count):
    """Positions [start, start + count) of a sequence (wrapping past its
    end: the pad policy) as merged global segments."""
    out = []
    length = seq_length(segs)
    if length == 0 or count <= 0:
        return out
    at = start % length
    while count > 0:
        j, base = 0, 0
        while j < len(segs) and base + segs[j][1] <= at:
            base += segs[j][1]
            j += 1
        if j == len(segs):
            at = 0
            continue
        off = at - base
        take = min(count, segs[j][1] - off)
        x = segs[j][0] + off
        if out and out[-1][0] + out[-1][1] == x:
            out[-1] = (out[-1][0], out[-1][1] + take)
        else:
            out.append((x, take))
        at += take
        count -= take
    return out


def split(segs, parts, pad):
    """The sequence cut into `parts` equal slices (the engine's partition)."""
    length = seq_length(segs)
    s = (length + parts - 1) // parts if pad else length // parts
    return [seq_range(segs, v * s, s) for v in range(parts)]


def remaining(state):
    """What a native state (every rank of state.world at state.record) leaves
    of its epoch, as global segments in order (rf_state_remaining)."""
    seq = state.sequence()
    slices = split(seq, state.world, state.pad)
    out = []
    for sl in slices:
        for seg in seq_range(sl, state.record, seq_length(sl) - state.record):
            if out and out[-1][0] + out[-1][1] == seg[0]:
                out[-1] = (out[-1][0], out[-1][1] + seg[1])
            else:
                out.append(seg)
    return out


def of_sequence(identity, epoch, segs):
    """A world-1 state at the start of a sequence `segs` of epoch `epoch`,
    with the dataset identity of the state `identity`."""
    s = State()
    for f in State.__slots__:
        setattr(s, f, getattr(identity, f))
    s.flags = (identity.flags & (FLAG_SHUFFLE | FLAG_PAD | FLAG_MIX | FLAG_REBASE)) | FLAG_SEQ
    s.world, s.epoch, s.record, s.batch = 1, epoch, 0, 0
    s.skipped = s.skipped_blocks = 0
    s.segs = [tuple(x) for x in segs]
    return s


def same_shares(a, b):
    """Two weight lists (millionths) naming the same shares (relative)."""
    sa, sb = sum(a), sum(b)
    return len(a) == len(b) and all(x * sb == y * sa for x, y in zip(a, b))


def epoch_start(identity, epoch):
    """A world-1 state at the start of epoch `epoch` of the stream `identity`
    names (its weight change too: an epoch after one is read through it)."""
    rb = identity.rebase()
    length = rb[1] if rb is not None and rb[0] == epoch else identity.dataset_records
    return of_sequence(identity, epoch, [(0, length)])
