// Rewrites a LeRobot dataset's episode parquet files with DuckDB under one codec and data page
// version, keeping every value and column as it is. Usage:
//   node rewrite_episodes.mjs CODEC VERSION FILE...   (each FILE is replaced in place)
import { DuckDBInstance } from '@duckdb/node-api';
import { renameSync } from 'node:fs';

const [codec, version, ...files] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
for (const f of files) {
  await c.run(`copy (select * from read_parquet('${f}')) to '${f}.tmp'
               (format parquet, compression ${codec}, parquet_version ${version})`);
  renameSync(`${f}.tmp`, f);
}
