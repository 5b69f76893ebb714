// parquet_gen.mjs OUTDIR - writes the Parquet test files with the two
// reference writers (DuckDB via @duckdb/node-api, arrow-rs via parquet-wasm)
// and, for each FILE.parquet, FILE.json: DuckDB's own read of it, each row
// {column: hex of the field's bytes as ringfeed gives them, or null}.
// Field bytes: strings/binary as is; numbers little-endian fixed width;
// booleans one byte; lists little-endian arrays of their elements.
import { DuckDBInstance } from '@duckdb/node-api';
import * as pw from 'parquet-wasm';
import fs from 'node:fs';

const out = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();

// The source table: every type, nulls, empty strings, empty lists.
await c.run(`CREATE TABLE src AS SELECT
  i::INTEGER AS id,
  (i * 1000003)::BIGINT * (CASE WHEN i % 2 = 0 THEN -1 ELSE 1 END) AS big,
  CASE WHEN i % 7 = 0 THEN NULL ELSE 'cat' || (i % 5) END AS s,
  CASE WHEN i % 11 = 0 THEN '' ELSE repeat(chr((97 + (i % 26))::INTEGER), (i % 37)::INTEGER) || ' é ' || i END AS text,
  (i / 3.0)::FLOAT AS f,
  CASE WHEN i % 13 = 0 THEN NULL ELSE i * 0.25 - 7 END::DOUBLE AS d,
  (i % 3 = 0) AS b,
  CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN []::INTEGER[] ELSE [i, i + 1, -i]::INTEGER[] END AS li,
  [i::BIGINT * 1000000007, -1]::BIGINT[] AS ll,
  encode('bin' || i)::BLOB AS bl
  FROM range(5000) t(i)`);

const files = [];
for (const comp of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4_raw']) {
  const f = `${out}/duck_${comp}.parquet`;
  await c.run(`COPY src TO '${f}' (FORMAT parquet, COMPRESSION ${comp}, ROW_GROUP_SIZE 2048)`);
  files.push(f);
}
await c.run(`COPY (SELECT * FROM src LIMIT 1) TO '${out}/duck_one.parquet' (FORMAT parquet)`);
await c.run(`COPY (SELECT * FROM src LIMIT 0) TO '${out}/duck_empty.parquet' (FORMAT parquet)`);
await c.run(`COPY (SELECT id, text FROM src) TO '${out}/duck_v2.parquet' (FORMAT parquet, PARQUET_VERSION V2, COMPRESSION zstd)`);
files.push(`${out}/duck_one.parquet`, `${out}/duck_empty.parquet`, `${out}/duck_v2.parquet`);
// a row past the reader's 4 MiB row bound (not .parquet: not compared, read apart)
await c.run(`COPY (SELECT i AS id, repeat('x', (CASE WHEN i = 1 THEN 5000000 ELSE 10 END)::INTEGER) AS text
  FROM range(3) t(i)) TO '${out}/big_row.pq' (FORMAT parquet)`);
// one row group of 9 MB of text: its rows' bound is the 4 MiB cap
await c.run(`COPY (SELECT i AS id, repeat(md5(i::VARCHAR), 94) AS text FROM range(3000) t(i))
  TO '${out}/wide.pq' (FORMAT parquet, COMPRESSION zstd)`);

// arrow-rs: DuckDB's file read into Arrow and written again with writer
// properties that choose encodings, page versions, dictionaries, codecs.
const srcBytes = fs.readFileSync(`${out}/duck_uncompressed.parquet`);
const C = pw.Compression, E = pw.Encoding, V = pw.WriterVersion;
const variants = {
  arrow_plain_v1: b => b.setDictionaryEnabled(false).setWriterVersion(V.V1).setCompression(C.UNCOMPRESSED),
  arrow_dict_v2_snappy: b => b.setDictionaryEnabled(true).setWriterVersion(V.V2).setCompression(C.SNAPPY),
  arrow_delta_v2_zstd: b => b.setDictionaryEnabled(false).setWriterVersion(V.V2).setCompression(C.ZSTD)
    .setColumnEncoding('id', E.DELTA_BINARY_PACKED).setColumnEncoding('big', E.DELTA_BINARY_PACKED)
    .setColumnEncoding('text', E.DELTA_LENGTH_BYTE_ARRAY).setColumnEncoding('s', E.DELTA_BYTE_ARRAY)
    .setColumnEncoding('bl', E.DELTA_BYTE_ARRAY),
  arrow_bss_brotli: b => b.setDictionaryEnabled(false).setWriterVersion(V.V2).setCompression(C.BROTLI)
    .setColumnEncoding('f', E.BYTE_STREAM_SPLIT).setColumnEncoding('d', E.BYTE_STREAM_SPLIT),
  arrow_lz4_small_pages: b => b.setDictionaryEnabled(true).setWriterVersion(V.V1).setCompression(C.LZ4_RAW)
    .setDataPageSizeLimit(1024).setMaxRowGroupSize(1500),
  arrow_gzip_v2_rle_bool: b => b.setDictionaryEnabled(false).setWriterVersion(V.V2).setCompression(C.GZIP),
};
for (const [name, f] of Object.entries(variants)) {
  const props = f(new pw.WriterPropertiesBuilder()).build();
  const bytes = pw.writeParquet(pw.readParquet(srcBytes), props); // a write consumes its table
  fs.writeFileSync(`${out}/${name}.parquet`, bytes);
  files.push(`${out}/${name}.parquet`);
}

function le(bytes, n, set) { const b = Buffer.alloc(bytes * n.length); n.forEach((v, k) => set(b, v, k * bytes)); return b; }
function enc(type, v) {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'INTEGER': return le(4, [v], (b, x, o) => b.writeInt32LE(x, o));
    case 'BIGINT': return le(8, [BigInt(v)], (b, x, o) => b.writeBigInt64LE(x, o));
    case 'FLOAT': return le(4, [v], (b, x, o) => b.writeFloatLE(x, o));
    case 'DOUBLE': return le(8, [v], (b, x, o) => b.writeDoubleLE(x, o));
    case 'BOOLEAN': return Buffer.from([v ? 1 : 0]);
    case 'VARCHAR': return Buffer.from(v, 'utf8');
    case 'BLOB': return Buffer.from(v.bytes ?? v);
    case 'INTEGER[]': return le(4, v.items ?? v, (b, x, o) => b.writeInt32LE(x, o));
    case 'BIGINT[]': return le(8, (v.items ?? v).map(BigInt), (b, x, o) => b.writeBigInt64LE(x, o));
  }
  throw new Error('type ' + type);
}
for (const f of files) {
  const r = await c.runAndReadAll(`SELECT * FROM read_parquet('${f}')`);
  const names = r.columnNames(), types = r.columnTypes().map(t => t.toString());
  const rows = r.getRows().map(row => Object.fromEntries(row.map((v, k) => {
    const b = enc(types[k], v);
    return [names[k], b === null ? null : b.toString('hex')];
  })));
  fs.writeFileSync(f.replace(/\.parquet$/, '.json'), JSON.stringify(rows));
}
console.log(files.length + ' files');
