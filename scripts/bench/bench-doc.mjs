// docs/benchmarks.md is written by `npm run bench`: each section's tables sit between
// `<!-- bench:KEY -->` and `<!-- /bench:KEY -->` (KEY is the section and its corpus, `apply-medium`),
// and a run replaces the blocks of the sections it ran, leaving the others' last recorded results.
// The prose around the blocks is the reader's guide and is kept as it is.
import { readFileSync, writeFileSync } from 'node:fs';

const open = (key) => `<!-- bench:${key} -->`;
const close = (key) => `<!-- /bench:${key} -->`;

/**
 * The document with each block in `blocks` (key -> Markdown) put between its markers: replaced
 * where the markers are, appended at the end where they are not.
 * @param {string} doc
 * @param {Map<string, string>} blocks
 * @returns {string}
 */
export function updateBenchDoc(doc, blocks) {
  let out = doc;
  for (const [key, body] of blocks) {
    const block = `${open(key)}\n${body.trim()}\n${close(key)}`;
    const start = out.indexOf(open(key));
    const end = start < 0 ? -1 : out.indexOf(close(key), start);
    if (start >= 0 && end >= 0) out = out.slice(0, start) + block + out.slice(end + close(key).length);
    else out = `${out.trimEnd()}\n\n${block}\n`;
  }
  return out;
}

/** Rewrites `path` with `blocks` (see updateBenchDoc); a missing file starts empty. */
export function writeBenchDoc(path, blocks) {
  let doc = '# Benchmarks\n';
  try {
    doc = readFileSync(path, 'utf8');
  } catch {
    /* first run: the blocks make the file */
  }
  writeFileSync(path, updateBenchDoc(doc, blocks));
}
