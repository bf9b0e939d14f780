// Writes one LeRobot-like episode with DuckDB under every codec and data page version, and the
// dump of its values (parquet_dump's format) as DuckDB holds them in memory: the reader's dump of
// each file must equal it byte for byte. Usage: node write_episodes.mjs OUT_DIR [ROWS]
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFileSync } from 'node:fs';

const out = process.argv[2];
const rows = Number(process.argv[3] || 6200);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
// Deterministic values: hashes of the row number, spread over a range that keeps floats
// non-trivial; task_index has few values (a dictionary), index runs on (delta encodings).
await c.run(`create table ep as select
    list_transform([0, 1, 2, 3, 4, 5], k -> ((hash(range * 6 + k) % 200003)::float / 1013 - 90)::float)
        as "observation.state",
    list_transform([0, 1, 2, 3, 4, 5], k -> ((hash(range * 7 + k) % 100003)::float / 977 - 50)::float)
        as "action",
    (range / 30.0)::float as "timestamp",
    range::bigint as "frame_index",
    3::bigint as "episode_index",
    (1000 + range)::bigint as "index",
    (range // 500)::bigint as "task_index",
    ((hash(range) % 1000003)::double / 7.0 - 1.0e4) as "reward",
    ((hash(range + 11) % 65536)::int - 32768) as "next.done_code"
  from range(${rows})`);
const cols = [['observation.state', true], ['action', true], ['timestamp'], ['frame_index'],
              ['episode_index'], ['index'], ['task_index'], ['reward'], ['next.done_code']];

const hex = (x) => {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, Number(x), true);
  return v.getBigUint64(0, true).toString(16).padStart(16, '0');
};
const table = (await c.runAndReadAll('select * from ep')).getRowObjects();
let dump = '';
for (const [name, list] of cols) {
  const path = list ? `${name}.list.element` : name;
  table.forEach((r, i) => {
    const v = r[name];
    const vals = list ? v.items : [v];
    dump += `${path} ${i}` + vals.map((x) => ' ' + hex(x)).join('') + '\n';
  });
}
writeFileSync(`${out}/expected.dump`, dump);

const files = [];
for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'brotli', 'lz4', 'lz4_raw']) {
  for (const version of ['V1', 'V2']) {
    const name = `episode_${codec}_${version}.parquet`;
    await c.run(`copy ep to '${out}/${name}' (format parquet, compression ${codec},
                 parquet_version ${version}, row_group_size 2048)`);
    files.push(name);
  }
}
// What the files hold, for the test's record: encodings, codecs and row groups per file.
const meta = await c.runAndReadAll(`select file_name, count(distinct row_group_id) as groups,
    string_agg(distinct encodings, '|') as encodings, string_agg(distinct compression, '|') as codecs
    from parquet_metadata('${out}/episode_*.parquet') group by file_name order by file_name`);
for (const r of meta.getRowObjectsJson()) {
  console.log(`${r.file_name.split('/').pop()} row_groups=${r.groups} codecs=${r.codecs} encodings=${r.encodings}`);
}
