"""tar_bombs.py KIND PATH [N] - compressed tars that decode to far more than
they hold, for tests/cli_open_bomb.sh:
  zeros  81 members of 200 MiB of zeros (16 GiB decoded), each frame
         written by the zstd CLI (-3): about 0.5 MB
  rle    one crafted zstd frame: a raw block (one sample's header), then N
         RLE blocks of 128 KiB of zeros each (4 bytes each): 0.56 MB for 17 GiB
  dense  N MiB in samples of 4 MiB, 128 random bytes per 128 KiB (about
         1000:1 under zstd -3: below the open's ratio limit)"""
import os, struct, subprocess, sys, tarfile, threading
def hdr(name, size):
    ti = tarfile.TarInfo(name); ti.size = size
    return ti.tobuf(format=tarfile.GNU_FORMAT)
def zstd(data, level=3):
    return subprocess.run(["zstd", "-q", "-%d" % level, "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout
def zstd_pipe(chunks, level=3):
    p = subprocess.Popen(["zstd", "-q", "-%d" % level, "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = []
    th = threading.Thread(target=lambda: out.append(p.stdout.read())); th.start()
    for c in chunks: p.stdin.write(c)
    p.stdin.close(); th.join(); p.wait(); return out[0]
kind, path = sys.argv[1], sys.argv[2]
if kind == "zeros":  # 81 members of 200 MiB of zeros, each frame by the zstd CLI
    member = 200 << 20
    z = zstd_pipe(bytes(1 << 20) for _ in range(member >> 20))
    with open(path, "wb") as f:
        for i in range(81):
            f.write(zstd(hdr("%06d.bin" % i, member)))
            f.write(z)
        f.write(zstd(bytes(1024)))
elif kind == "rle":  # one frame: a raw block (the header), then RLE blocks of zeros
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 140000
    h = hdr("000000.bin", 131072 - 512) # one sample, then zeros: the archive's end, padded
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # no checksum, window 128 KiB
    out += struct.pack("<I", (len(h) << 3) | 0)[:3] + h
    blk = struct.pack("<I", (131072 << 3) | (1 << 1))[:3] + b"\x00"
    out += blk * (n - 1)
    out += struct.pack("<I", (131072 << 3) | (1 << 1) | 1)[:3] + b"\x00"
    open(path, "wb").write(out)
elif kind == "dense":  # about 1000:1: many steps served from one read
    mib = int(sys.argv[3])
    def members():
        for i in range(mib // 4):
            yield hdr("%06d.bin" % i, 4 << 20)
            for _ in range(4 * 8):
                yield os.urandom(128) + bytes(131072 - 128)
        yield bytes(1024)
    with open(path, "wb") as f:
        f.write(zstd_pipe(members()))
