// Unit tests of the wire pieces that are pure functions: hg's argument encodings, capabilities,
// bundle specs and clone-bundle manifests, the changelog graph and phases, branch extras.

import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../../../src/main/engine/errors';
import {
  Capabilities,
  clientBundleCaps,
  decodeBundle2Caps,
  encodeBundle2Caps,
} from '../../../../src/main/engine/protocol/capabilities';
import {
  ChangelogGraph,
  computePhases,
  draftRootsText,
} from '../../../../src/main/engine/repo/changelog-graph';
import {
  chooseCloneBundle,
  parseBundleSpec,
  parseCloneBundlesManifest,
  sizeToInt,
} from '../../../../src/main/engine/operations/clone/clone-bundles';
import {
  decodeBinaryBookmarks,
  decodePhaseHeads,
  planStream,
} from '../../../../src/main/engine/operations/clone/clone';
import { encodeValueInHeaders } from '../../../../src/main/engine/client/http-peer';
import { encodeGetbundleArgs } from '../../../../src/main/engine/client/peer';
import { branchOfChangelogText } from '../../../../src/main/engine/operations/serve/branchmap';
import {
  bypassesProxy,
  proxyFromEnvironment,
  splitUrlCredentials,
} from '../../../../src/main/engine/client/http-client';
import {
  decodeKeys,
  encodeBatchCommands,
  escapeBatchArg,
  parseQs,
  quote,
  quotePlus,
  unescapeBatchArg,
  unquote,
  urlencode,
} from '../../../../src/main/engine/protocol/wire-encoding';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../fixtures/hg');

describe('argument encodings (httppeer, wireprototypes)', () => {
  it('urlencode is Python quote_plus over sorted pairs', () => {
    expect(urlencode([['cmds', 'heads ;known nodes=']])).toBe('cmds=heads+%3Bknown+nodes%3D');
    expect(quotePlus('a~b_c.d-e/f')).toBe('a~b_c.d-e%2Ff');
    expect(quote('a b/c,d')).toBe('a%20b/c%2Cd');
    expect(unquote('%41%zz%4')).toBe('A%zz%4');
    expect(parseQs('a=1&b=&c&a=2&d=x+y%21')).toEqual(
      new Map([
        ['a', ['1', '2']],
        ['b', ['']],
        ['c', ['']],
        ['d', ['x y!']],
      ]),
    );
  });

  it('X-HgArg headers split like encodevalueinheaders (1024 → 1009-byte values)', () => {
    const h = encodeValueInHeaders('x'.repeat(2500), 'X-HgArg', 1024);
    expect(h.map(([k, v]) => [k, v.length])).toEqual([
      ['X-HgArg-1', 1009],
      ['X-HgArg-2', 1009],
      ['X-HgArg-3', 482],
    ]);
  });

  it('batch escaping round-trips, and commands encode as hg does', () => {
    const nasty = 'a:b,c;d=e:c:o';
    expect(unescapeBatchArg(escapeBatchArg(nasty))).toBe(nasty);
    expect(
      encodeBatchCommands([
        { op: 'heads', args: {} },
        { op: 'known', args: { nodes: '' } },
      ]),
    ).toBe('heads ;known nodes=');
  });

  it('getbundle arguments: nodes spaced, bundlecaps sorted, booleans 0/1', () => {
    expect(
      encodeGetbundleArgs({
        heads: ['aa', 'bb'],
        bundlecaps: ['bundle2=x', 'HG20'],
        cg: false,
        stream: true,
        listkeys: ['bookmarks'],
      }),
    ).toEqual({
      heads: 'aa bb',
      bundlecaps: 'HG20,bundle2=x',
      listkeys: 'bookmarks',
      cg: '0',
      stream: '1',
    });
  });

  it('listkeys decoding', () => {
    expect(decodeKeys('mybook\tb291\nother\tcafe')).toEqual(
      new Map([
        ['mybook', 'b291'],
        ['other', 'cafe'],
      ]),
    );
    expect(() => decodeKeys('no tab here')).toThrow(/malformed listkeys/);
  });
});

describe('capabilities', () => {
  const raw = readFileSync(join(FIXTURES, 'default', 'capabilities.txt'), 'latin1');
  const caps = new Capabilities(raw);

  it('parses the fixture server caps', () => {
    expect(caps.streamRequirements()).toEqual([
      'generaldelta',
      'revlog-compression-zstd',
      'revlogv1',
      'sparserevlog',
    ]);
    expect(caps.bundle2().get('stream')).toEqual(['v2']);
    expect(caps.bundle2().get('error')).toEqual(['abort', 'unsupportedcontent', 'pushraced', 'pushkey']);
    expect(caps.compression()).toEqual(['zstd', 'zlib']);
    expect(caps.httpHeaderLimit()).toBe(1024);
    expect(
      new Capabilities(
        readFileSync(join(FIXTURES, 'legacy', 'capabilities.txt'), 'latin1'),
      ).streamRequirements(),
    ).toEqual(['revlogv1']);
  });

  it('bundle2 caps blobs round-trip; the client blob is what hg 6.3.2 sends', () => {
    const blob = decodeBundle2Caps(
      decodeURIComponent(
        raw
          .split(' ')
          .find((c) => c.startsWith('bundle2='))!
          .slice(8),
      ),
    );
    expect(decodeBundle2Caps(encodeBundle2Caps(blob))).toEqual(blob);
    expect(clientBundleCaps()[1]).toBe(
      'bundle2=HG20%0Abookmarks%0Achangegroup%3D01%2C02%0Adigests%3Dmd5%2Csha1%2Csha512%0Aerror%3Dabort%2Cunsupportedcontent%2Cpushraced%2Cpushkey%0Ahgtagsfnodes%0Alistkeys%0Aphases%3Dheads%0Apushkey%0Aremote-changegroup%3Dhttp%2Chttps%0Astream%3Dv2',
    );
  });

  it('planStream: auto prefers v2, NO_STREAM without stream caps, UNSUPPORTED for unknown requirements', () => {
    expect(planStream(caps, 'auto').version).toBe('v2');
    expect(planStream(caps, 'v1').version).toBe('v1');
    const v1only = new Capabilities(raw.replace('%0Astream%3Dv2', ''));
    expect(planStream(v1only, 'auto').version).toBe('v1');
    expect(() => planStream(v1only, 'v2')).toThrow(expect.objectContaining({ code: 'NO_STREAM' }));
    expect(() => planStream(new Capabilities('batch getbundle'), 'auto')).toThrow(
      expect.objectContaining({ code: 'NO_STREAM' }),
    );
    expect(() => planStream(new Capabilities('streamreqs=revlogv1,exp-future-thing'), 'auto')).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_REQUIREMENTS' }),
    );
  });
});

describe('clone bundles (bundlecaches.py)', () => {
  it('parses specs like parsebundlespec (strict)', () => {
    // (a manifest holds `requirements%3Da%2Cb`: decoded once there, once more here)
    expect(parseBundleSpec('none-packed1;requirements=generaldelta%2Crevlogv1')).toMatchObject({
      compression: 'none',
      version: 'packed1',
      stream: true,
    });
    expect(
      parseBundleSpec('none-packed1;requirements=generaldelta%2Crevlogv1').params.get('requirements'),
    ).toBe('generaldelta,revlogv1');
    expect(parseBundleSpec('none-v2;stream=v2').stream).toBe(true);
    expect(parseBundleSpec('zstd-v2').stream).toBe(false);
    expect(parseBundleSpec('gzip-packed1').stream).toBe(false);
    expect(() => parseBundleSpec('packed1')).toThrow(/prefixed with compression/);
    expect(() => parseBundleSpec('lzma-v2')).toThrow(/not supported/);
    expect(() => parseBundleSpec('zstd-v1')).toThrow(/not supported on v1/);
    expect(() => parseBundleSpec('none-v2;stream')).toThrow(/missing "="/);
    expect(() => parseBundleSpec('none-packed1;requirements%3Drevlogv1')).toThrow(/missing "="/);
  });

  it('manifest parsing and the choice of a stream entry', () => {
    const m = parseCloneBundlesManifest(
      'https://a/full.hg BUNDLESPEC=zstd-v2\n\nhttps://a/p1.hg BUNDLESPEC=none-packed1;requirements%3Drevlogv1 REQUIRESNI=true\nhttps://a/v2.hg BUNDLESPEC=none-v2;stream=v2\nhttps://a/nospec.hg\n',
    );
    expect(m.map((e) => e.get('URL'))).toEqual([
      'https://a/full.hg',
      'https://a/p1.hg',
      'https://a/v2.hg',
      'https://a/nospec.hg',
    ]);
    expect(m[1]!.get('BUNDLESPEC')).toBe('none-packed1;requirements=revlogv1');
    expect(chooseCloneBundle(m, 'auto')!.url).toBe('https://a/p1.hg');
    expect(chooseCloneBundle(m, 'v2')!.url).toBe('https://a/v2.hg');
    expect(chooseCloneBundle(m, 'v1')!.url).toBe('https://a/p1.hg');
    const unsupported = parseCloneBundlesManifest(
      'https://a/x.hg BUNDLESPEC=none-packed1;requirements%3Dexp-weird\nhttps://a/y.hg BUNDLESPEC=none-v2;stream=v2 REQUIREDRAM=100000GB\n',
    );
    expect(chooseCloneBundle(unsupported, 'auto')).toBeNull();
    expect(sizeToInt('64MB')).toBe(64 << 20);
    expect(sizeToInt('1.5 kb')).toBe(1536);
  });
});

describe('changelog graph, phases, bookmarks and phase-heads parts', () => {
  // a small DAG: 0 - 1 - 2 - 3 ; 1 - 4 ; 3,4 - 5 (merge)
  const parents: [number, number][] = [
    [-1, -1],
    [0, -1],
    [1, -1],
    [2, -1],
    [1, -1],
    [3, 4],
  ];
  const index = Buffer.alloc(64 * parents.length);
  parents.forEach(([p1, p2], r) => {
    if (r === 0) index.writeUInt32BE(0x00010001, 0); // inline, v1 (no data: compLen 0)
    index.writeInt32BE(p1, r * 64 + 24);
    index.writeInt32BE(p2, r * 64 + 28);
    index.fill(r + 1, r * 64 + 32, r * 64 + 52);
  });
  const g = ChangelogGraph.parse(index);
  const hexOf = (r: number): string => Buffer.alloc(20, r + 1).toString('hex');

  it('heads, ancestors, descendants', () => {
    expect(g.headRevs()).toEqual([5]);
    expect(g.headRevs((r) => r !== 5)).toEqual([3, 4]);
    expect([...g.ancestors([4])]).toEqual([1, 1, 0, 0, 1, 0]);
    expect([...g.descendants([2])]).toEqual([0, 0, 1, 1, 0, 1]);
  });

  it('phases from roots and draft roots back', () => {
    const phases = computePhases(
      g,
      new Map([
        [1, [hexOf(2)]],
        [2, [hexOf(4)]],
      ]),
    );
    expect([...phases]).toEqual([0, 0, 1, 1, 2, 2]);
    const draftOnly = computePhases(g, new Map([[1, [hexOf(2), hexOf(4)]]]));
    expect(draftRootsText(g, draftOnly)).toBe(`1 ${hexOf(2)}\n1 ${hexOf(4)}\n`);
  });

  it('rejects a corrupt index', () => {
    const bad = Buffer.from(index);
    bad.writeInt32BE(7, 2 * 64 + 24); // parent after itself
    expect(() => ChangelogGraph.parse(bad)).toThrow(expect.objectContaining({ code: 'REVLOG' }));
    expect(() => ChangelogGraph.parse(index.subarray(0, 100))).toThrow(/corrupted/);
  });

  it('binary bookmarks and phase-heads parts (bookmarks.binarydecode, phases.binarydecode)', () => {
    const bm = Buffer.concat([
      Buffer.from('a6730d050fcf9f306f673a5185e6d2a95b3dbc6d', 'hex'),
      Buffer.from([0, 6]),
      Buffer.from('mybook'),
    ]);
    expect(decodeBinaryBookmarks(bm)).toEqual([['mybook', 'a6730d050fcf9f306f673a5185e6d2a95b3dbc6d']]);
    expect(() => decodeBinaryBookmarks(bm.subarray(0, bm.length - 1))).toThrow(/truncated/);
    const ph = Buffer.concat([Buffer.from([0, 0, 0, 1]), Buffer.alloc(20, 7)]);
    expect(decodePhaseHeads(ph)).toEqual([[1, '07'.repeat(20)]]);
    expect(() => decodePhaseHeads(ph.subarray(1))).toThrow(/bad phase-heads/);
  });
});

describe('branch names from changelog texts', () => {
  it('extra parsing and escapes (changelog.decodeextra)', () => {
    expect(branchOfChangelogText('abc\nuser\n1700000000 0\nfile\n\ndesc')).toBe('default');
    expect(branchOfChangelogText('abc\nuser\n1700000000 0 branch:stable\0close:1\nfile\n\ndesc')).toBe(
      'stable',
    );
    expect(branchOfChangelogText('abc\nuser\n1700000000 0 branch:a\\\\b\\nc\nfile\n\ndesc')).toBe('a\\b\nc');
  });
});

describe('URLs and proxies', () => {
  it('credentials are split off the URL', () => {
    expect(splitUrlCredentials('https://u%40x:p%3Aw@host/repo')).toEqual({
      url: 'https://host/repo',
      credentials: { user: 'u@x', password: 'p:w' },
    });
    expect(() => splitUrlCredentials('ssh://host/repo')).toThrow(/scheme/);
    // the error (an event, a history record) never repeats what was typed before the '@'
    for (const bad of [
      'http://tok:s3cret@host:99999/x',
      'http://tok:s3cret@exa mple/x',
      'ftp://tok:s3cret@h/x',
    ]) {
      expect(() => splitUrlCredentials(bad)).toThrow(SluiceError);
      expect(() => splitUrlCredentials(bad)).not.toThrow(/s3cret|tok/);
    }
  });

  it('environment proxies like hg: localhost and 127.0.0.1 always bypass, no_proxy patterns', () => {
    const env = { http_proxy: 'proxy:3128', no_proxy: '.corp,example.org' };
    expect(proxyFromEnvironment(new URL('http://hg.example.com/'), env)?.url).toBe('http://proxy:3128');
    expect(proxyFromEnvironment(new URL('https://hg.example.com/'), env)?.url).toBe('http://proxy:3128');
    expect(proxyFromEnvironment(new URL('http://x/'), {})).toBeNull();
    const np = proxyFromEnvironment(new URL('http://x/'), env)!.noProxy;
    for (const h of ['localhost', '127.0.0.1', 'a.corp', 'example.org', 'hg.example.org'])
      expect(bypassesProxy(h, np)).toBe(true);
    expect(bypassesProxy('corp.com', np)).toBe(false);
  });
});
