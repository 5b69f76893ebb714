"""parquet_bench.py BUILD [ROWS] - ringfeed vs DuckDB on a Parquet text
column (zstd and snappy): decoded rows/s with the same thread count and
peak RSS, medians of 3, side by side. The file is written by DuckDB
(@duckdb/node-api from .cache/npm, scripts/deps.sh --test): ROWS rows
(default 200000) of id and a text of 0.6-2.4 KB, row groups of 30000.
ringfeed: `read --columns text --threads T --budget 512MiB --no-shuffle`; DuckDB:
`SELECT sum(length(text))` over read_parquet with SET threads = T (every
value decoded), in a node process (its RSS includes node's own ~50 MB)."""
import os, statistics, subprocess, sys, tempfile, time

build = sys.argv[1]
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
threads = 2
src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
npm = os.path.join(src, ".cache", "npm", "node_modules")
if not os.path.isdir(os.path.join(npm, "@duckdb", "node-api")):
    sys.exit("parquet_bench: @duckdb/node-api is not installed (scripts/deps.sh --test)")
tmp = tempfile.mkdtemp(prefix="rf-parquet-bench-")
os.symlink(npm, os.path.join(tmp, "node_modules"))
duck = os.path.join(tmp, "duck.mjs")
open(duck, "w").write("""
import { DuckDBInstance } from '@duckdb/node-api';
const [mode, a, b, t] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run(`SET threads = ${t || 1}`);
if (mode === 'write') {
  for (const comp of ['zstd', 'snappy'])
    await c.run(`COPY (SELECT i AS id, repeat(md5(i::VARCHAR) || ' ' || md5((i * 7)::VARCHAR) ||
      ' the quick brown fox jumps over the lazy dog ', (10 + i % 30)::INTEGER) AS text
      FROM range(${b}) t(i)) TO '${a}/text_${comp}.parquet'
      (FORMAT parquet, COMPRESSION ${comp}, ROW_GROUP_SIZE 30000)`);
} else {
  const r = await c.runAndReadAll(`SELECT count(*), sum(length(text)) FROM read_parquet('${a}')`);
  console.log(JSON.stringify(r.getRows()[0].map(String)));
}
""")
subprocess.run(["node", duck, "write", tmp, str(rows)], check=True)


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode:
        sys.exit(f"parquet_bench: {cmd[0]} failed: {err.decode()[-500:]}")
    return wall, out.decode()


def measured(cmd):
    """wall seconds and peak RSS (KiB, wait4) of one run"""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execvp(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if status:
        sys.exit(f"parquet_bench: {' '.join(cmd)} failed ({status})")
    return wall, ru.ru_maxrss


cli = os.path.join(build, "ringfeed")
print(f"rows {rows}, threads {threads}; medians of 3")
print("| file | ringfeed rows/s | DuckDB rows/s | ratio | ringfeed peak RSS MiB | DuckDB peak RSS MiB | RSS ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
for comp in ("zstd", "snappy"):
    f = os.path.join(tmp, f"text_{comp}.parquet")
    _, check = run(["node", duck, "read", f, "", str(threads)])
    n = int(check.strip().strip("[]").split(",")[0].strip('"'))
    assert n == rows, check
    rf = [measured([cli, "read", "--columns", "text", "--threads", str(threads),
                    "--budget", "512MiB", "--no-shuffle", f]) for _ in range(3)]
    dk = [measured(["node", duck, "read", f, "", str(threads)]) for _ in range(3)]
    rf_rate = rows / statistics.median(w for w, _ in rf)
    dk_rate = rows / statistics.median(w for w, _ in dk)
    rf_rss = statistics.median(r for _, r in rf) / 1024
    dk_rss = statistics.median(r for _, r in dk) / 1024
    print(f"| {comp} ({os.path.getsize(f) >> 20} MiB) | {rf_rate:,.0f} | {dk_rate:,.0f} | "
          f"{rf_rate / dk_rate:.2f} | {rf_rss:.0f} | {dk_rss:.0f} | {rf_rss / dk_rss:.2f} |")
subprocess.run(["rm", "-rf", tmp])
