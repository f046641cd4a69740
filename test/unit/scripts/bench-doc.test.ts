// `npm run bench` rewrites docs/benchmarks.md's blocks of the sections it ran, nothing else.
import { describe, expect, it } from 'vitest';
import { updateBenchDoc } from '../../../scripts/bench/bench-doc.mjs';

describe('updateBenchDoc', () => {
  const doc = [
    '# Benchmarks',
    '',
    'Guide text.',
    '<!-- bench:apply-medium -->',
    'old apply',
    '<!-- /bench:apply-medium -->',
    'Between.',
    '<!-- bench:history -->',
    'old history',
    '<!-- /bench:history -->',
    'End.',
    '',
  ].join('\n');

  it('replaces the blocks it has and keeps the prose and the other blocks', () => {
    const out = updateBenchDoc(doc, new Map([['apply-medium', '\nnew apply\n| a |\n']]));
    expect(out).toBe(doc.replace('old apply', 'new apply\n| a |'));
  });

  it('appends a block whose markers are missing', () => {
    const out = updateBenchDoc(doc, new Map([['pull-large', 'pull']]));
    expect(out).toBe(`${doc.trimEnd()}\n\n<!-- bench:pull-large -->\npull\n<!-- /bench:pull-large -->\n`);
  });

  it('leaves a document alone when given nothing', () => {
    expect(updateBenchDoc(doc, new Map())).toBe(doc);
  });
});
