"""store_records.py [--loader] URL... - the records a store test reads
through Python, one line per URL: "dataset records=N sha256=H" from
RingfeedDataset (torch), and with --loader first "loader records=N
sha256=H" from ringfeed.Loader (numpy). The digest covers every batch's
payload and offsets in order, so two URLs of one dataset give equal lines.
A missing numpy or torch says "left out: ..." on stderr and exits 0 with
what it could read (cli_azure, cli_gcs and cli_hf share it)."""
import hashlib
import sys


def left_out(e):
    print(f"left out: {e}", file=sys.stderr)
    sys.exit(0)


def main(argv):
    loader = argv[:1] == ["--loader"]
    urls = argv[1:] if loader else argv
    if loader:
        try:
            import numpy  # noqa: F401
        except ImportError as e:
            left_out(e)
        import ringfeed
        for url in urls:
            h, n = hashlib.sha256(), 0
            with ringfeed.Loader(url, batch=64, shuffle=False, budget="64MiB") as L:
                for b in L:
                    h.update(b.payload_array().tobytes())
                    h.update(b.offsets_array().tobytes())
                    n += len(b.offsets_array()) - 1
                    b.release()
            print(f"loader records={n} sha256={h.hexdigest()}", flush=True)
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        left_out(e)
    from ringfeed.torch import RingfeedDataset
    for url in urls:
        h, n = hashlib.sha256(), 0
        ds = RingfeedDataset(url, rank=0, world=1, shuffle=False, batch=64, cache="off")
        for item in ds:
            h.update(item["payload"].numpy().tobytes())
            h.update(item["offsets"].numpy().tobytes())
            n += len(item["offsets"]) - 1
        ds.close()
        print(f"dataset records={n} sha256={h.hexdigest()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
