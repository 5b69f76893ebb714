"""parquet_check.py CLI FILE.parquet [read options...]: reads FILE through
`ringfeed read --output tar` and checks every row's fields equal DuckDB's
read of it (FILE.json from parquet_gen.mjs): the same rows, each present
field byte for byte, each null absent. Exit 1 with the first difference."""
import io, json, subprocess, sys, tarfile

cli, path, opts = sys.argv[1], sys.argv[2], sys.argv[3:]
want = json.load(open(path[:-len(".parquet")] + ".json"))
p = subprocess.run([cli, "read", "--output", "tar", *opts, path], capture_output=True)
if p.returncode:
    sys.exit(f"FAIL {path}: ringfeed read: {p.stderr.decode()}")
got = {}
with tarfile.open(fileobj=io.BytesIO(p.stdout)) as t:
    for m in t:
        key, field = m.name.rsplit(".", 1)
        row = int(key.rsplit("/", 1)[1])
        got.setdefault(row, {})[field] = t.extractfile(m).read().hex()
cols = [c for c in opts[opts.index("--columns") + 1].split(",")] if "--columns" in opts else None
# a row without fields has no tar members: the row count comes from --digest
d = subprocess.run([cli, "read", "--digest", *opts, path], capture_output=True, text=True)
records = int(d.stdout.split("records=")[1].split()[0]) if "records=" in d.stdout else -1
if records != len(want) or any(r >= len(want) for r in got):
    sys.exit(f"FAIL {path}: {records} rows, DuckDB reads {len(want)}")
for i, row in enumerate(want):
    for col, v in row.items():
        if cols is not None and col not in cols:
            continue
        g = got.get(i, {}).get(col)
        if g != v:
            sys.exit(f"FAIL {path}: row {i} column {col}: ringfeed {g!r}, DuckDB {v!r}")
    extra = set(got.get(i, {})) - set(row)
    if extra:
        sys.exit(f"FAIL {path}: row {i}: fields DuckDB does not have: {extra}")
print(f"ok {path}: {len(want)} rows")
