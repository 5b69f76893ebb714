"""wds_tars.py DIR: the WebDataset tar dataset the store tests (cli_azure,
cli_gcs, cli_hf) read: 3 shards of 40 samples, fields bin (1-9 KB of seeded
random bytes) and cls, under member names s{shard}/{sample}.{field}."""
import io
import random
import sys
import tarfile

rng = random.Random(7)
for s in range(3):
    with tarfile.open(f"{sys.argv[1]}/shard-{s:06d}.tar", "w", format=tarfile.PAX_FORMAT) as t:
        for i in range(40):
            for ext, data in (("bin", rng.randbytes(rng.randint(1000, 9000))), ("cls", b"%d" % (i % 10))):
                ti = tarfile.TarInfo(f"s{s}/{i:05d}.{ext}")
                ti.size = len(data)
                ti.mtime = 0
                t.addfile(ti, io.BytesIO(data))
