// parquet_tokens.mjs OUTDIR - pre-tokenized Parquet files for cli_parquet_tokens
// (DuckDB via @duckdb/node-api, arrow-rs via parquet-wasm) and, for each
// FILE.parquet, FILE.tokens: DuckDB's own read of its token column, the
// values of every row concatenated in row order (little-endian int32, or
// int64 for a BIGINT column): the stream whose windows ringfeed must give.
import { DuckDBInstance } from '@duckdb/node-api';
import * as pw from 'parquet-wasm';
import fs from 'node:fs';

const out = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();

// ~2.4 M tokens in lists of 0..499 (nulls, empty lists), 5 row groups
await c.run(`CREATE TABLE t AS SELECT i::INTEGER AS id, 'doc ' || i AS text,
  CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN []::INTEGER[]
       ELSE list_transform(range(((i * 37) % 500)::BIGINT),
                           x -> ((hash(i * 1000 + x) % 2000000000)::BIGINT - 1000000000)::INTEGER) END AS input_ids,
  [i, -i]::BIGINT[] AS pair
  FROM range(10000) t(i)`);
const files = { tok: 'input_ids', tok64: 'input_ids', flat: 'tok', tok_arrow: 'input_ids' };
await c.run(`COPY t TO '${out}/tok.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)`);
await c.run(`COPY (SELECT input_ids::BIGINT[] AS input_ids FROM t WHERE id < 1500)
  TO '${out}/tok64.parquet' (FORMAT parquet, COMPRESSION snappy)`);
// one token a row, optional: a null row has none
await c.run(`COPY (SELECT CASE WHEN id % 10 = 3 THEN NULL ELSE id * 3 - 5000 END::INTEGER AS tok, text FROM t)
  TO '${out}/flat.parquet' (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 2048)`);
// arrow-rs: data pages v2, dictionaries, gzip, row groups of 700 rows (of
// DuckDB's first 3000 rows)
await c.run(`COPY (SELECT * FROM t WHERE id < 3000) TO '${out}/arrow_src.pq' (FORMAT parquet)`);
const props = new pw.WriterPropertiesBuilder().setDictionaryEnabled(true)
  .setWriterVersion(pw.WriterVersion.V2).setCompression(pw.Compression.GZIP)
  .setMaxRowGroupSize(700).build();
fs.writeFileSync(`${out}/tok_arrow.parquet`,
  pw.writeParquet(pw.readParquet(fs.readFileSync(`${out}/arrow_src.pq`)), props));

for (const [f, col] of Object.entries(files)) {
  const r = await c.runAndReadAll(`SELECT ${col} FROM read_parquet('${out}/${f}.parquet')`);
  const type = r.columnTypes()[0].toString();
  const wide = type.startsWith('BIGINT');
  const toks = [];
  for (const [v] of r.getRows()) {
    if (v === null) continue;
    if (v.items !== undefined) toks.push(...v.items); else toks.push(v);
  }
  const b = Buffer.alloc((wide ? 8 : 4) * toks.length);
  toks.forEach((x, k) => wide ? b.writeBigInt64LE(BigInt(x), 8 * k) : b.writeInt32LE(x, 4 * k));
  fs.writeFileSync(`${out}/${f}.tokens`, b);
}
console.log(Object.keys(files).length + ' files');
