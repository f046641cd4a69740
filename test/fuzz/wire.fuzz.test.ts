// Fuzzing WIRE's parsers of server responses: capabilities (and the bundle2 caps blob inside),
// the HTTP response framing of HttpPeer (status, content type, 0.1/0.2 media types, engine
// header, compressed bodies) through a fake session, batch results (heads, known), listkeys,
// branchmap, the bookmarks and phase-heads binary parts, phaseroots, clone bundle manifests and
// bundle specs, query strings and node lists.
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Capabilities, decodeBundle2Caps } from '../../src/main/engine/protocol/capabilities';
import { HttpPeer } from '../../src/main/engine/client/http-peer';
import type { HttpResponse, HttpSession } from '../../src/main/engine/client/http-client';
import { DigestSession, chooseChallenge, parseChallenges } from '../../src/main/engine/client/http-auth';
import { decodeBinaryBookmarks, decodePhaseHeads } from '../../src/main/engine/operations/clone/clone';
import {
  decodeKeys,
  decodeNodeList,
  encodeKeys,
  encodeNodeList,
  escapeBatchArg,
  isHexNode,
  parseQs,
  unescapeBatchArg,
  unquote,
} from '../../src/main/engine/protocol/wire-encoding';
import { parsePhaseRoots } from '../../src/main/engine/repo/changelog-graph';
import {
  parseBundleSpec,
  parseCloneBundlesManifest,
} from '../../src/main/engine/operations/clone/clone-bundles';
import { ByteSource } from '../../src/main/engine/format/byte-source';
import {
  b85decode,
  listkeysObsolete,
  markersFromListkeys,
  readMarkersAsV1,
  readObsstoreV1,
} from '../../src/main/engine/repo/obsstore';
import {
  SHAPES,
  asyncPieces,
  cutsArb,
  drainBundle2,
  fixture,
  mutatedArb,
  outcomeOf,
  params,
  parsesOrSluiceError,
  splitBy,
} from './fuzz-support';

const CAPS = SHAPES.map((s) => fixture(s, 'capabilities.txt'));
const LISTKEYS = SHAPES.map((s) => fixture(s, 'listkeys-bookmarks.txt'));
const HEADS = SHAPES.map((s) => fixture(s, 'heads.txt'));
const GETBUNDLE_NONE = SHAPES.map((s) => fixture(s, 'getbundle-stream2.bin'));
/** the same bundle2 streams behind the other 0.2 engine headers (`zlib`, `zstd` when the CLI is there) */
const engineFramed = (engine: string, body: Uint8Array): Buffer =>
  Buffer.concat([Buffer.from([engine.length]), Buffer.from(engine), body]);
const GETBUNDLE = GETBUNDLE_NONE.flatMap((b) => {
  const hg20 = b.subarray(1 + b[0]!);
  const zstd = spawnSync('zstd', ['-q', '-c', '-3'], { input: hg20 });
  return [
    b,
    engineFramed('zlib', deflateSync(hg20)),
    ...(zstd.status === 0 ? [engineFramed('zstd', zstd.stdout as Buffer)] : []),
    engineFramed('bogus', hg20),
  ];
});
const latin1 = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

/** bookmarks.binaryencode of [name, hex node] pairs. */
const encodeBookmarks = (marks: [string, string][]): Buffer =>
  Buffer.concat(
    marks.flatMap(([name, node]) => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(Buffer.byteLength(name, 'latin1'));
      return [Buffer.from(node, 'hex'), len, Buffer.from(name, 'latin1')];
    }),
  );
/** phases.binaryencode of [phase, hex node] pairs. */
const encodePhaseHeads = (heads: [number, string][]): Buffer =>
  Buffer.concat(
    heads.map(([phase, node]) => {
      const b = Buffer.alloc(4);
      b.writeInt32BE(phase);
      return Buffer.concat([b, Buffer.from(node, 'hex')]);
    }),
  );
/**
 * Accepted markers are whole format-1 markers back to back: their ends rise to the data's end,
 * and the same bytes read again as a format-1 payload split at the same places.
 */
function expectWholeMarkers(block: { data: Buffer; ends: number[] }): void {
  const rising = block.ends.every((end, i) => end > (i === 0 ? 0 : block.ends[i - 1]!));
  expect(rising).toBe(true);
  expect(block.ends.at(-1) ?? 0).toBe(block.data.length);
  expect(readMarkersAsV1(Buffer.concat([Buffer.of(1), block.data])).ends).toEqual(block.ends);
}

/** A canned HTTP response for HttpPeer. */
function response(
  url: string,
  status: number,
  contentType: string | undefined,
  body: Uint8Array,
  cuts: number[],
): HttpResponse {
  const pieces = splitBy(body, cuts);
  return {
    status,
    statusMessage: 'X',
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    url,
    body: asyncPieces(pieces),
    readAll: async (limit = 64 << 20) => Buffer.from(body.subarray(0, limit)),
    readHead: async (limit) => Buffer.from(body.subarray(0, limit)),
    discard: () => undefined,
  };
}

/** A session that answers each request with the next canned (status, type, body). */
function fakeSession(
  answers: { status: number; type?: string; body: Uint8Array }[],
  cuts: number[],
): HttpSession {
  let i = 0;
  return {
    request: async (url: string) => {
      const a = answers[Math.min(i++, answers.length - 1)]!;
      return response(url, a.status, a.type, a.body, cuts);
    },
  } as unknown as HttpSession;
}

const CONTENT_TYPES = [
  'application/mercurial-0.1',
  'application/mercurial-0.2',
  'application/mercurial-0.3',
  'application/mercurial-0.2; charset=x',
  'application/hg-error',
  'text/html',
  '',
  undefined,
];

describe('fuzz: capabilities and the handshake', () => {
  it('mutated and random capability strings: every accessor answers or throws a SluiceError', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          mutatedArb(CAPS).map((m) => latin1(m.bytes)),
          fc.string({ maxLength: 200 }),
        ),
        async (raw) => {
          await parsesOrSluiceError(() => {
            const c = new Capabilities(raw);
            c.bundle2();
            c.streamRequirements();
            c.compression();
            c.httpHeaderLimit();
            c.mediaTypes();
            c.names();
            decodeBundle2Caps(unquote(c.get('bundle2') ?? raw));
          }, 'capabilities');
        },
      ),
      params(500),
    );
  });

  it('the harness itself: the real captures go through the fake session and parse', async () => {
    for (const shape of [0, 1]) {
      const session = fakeSession(
        [
          { status: 200, type: 'application/mercurial-0.1', body: CAPS[shape]! },
          { status: 200, type: 'application/mercurial-0.2', body: GETBUNDLE_NONE[shape]! },
        ],
        [7, 100, 1000],
      );
      const peer = await HttpPeer.connect('http://127.0.0.1:1/repo', session);
      expect(peer.caps.streamRequirements()).toContain('revlogv1');
      const res = await peer.getbundle({ bundlecaps: ['HG20'], cg: false, stream: true });
      expect(res.engine).toBe('none');
      expect(await parsesOrSluiceError(() => drainBundle2(new ByteSource(res.body)))).toBe('ok');
    }
  });

  it('HttpPeer.connect + heads/known batch + listkeys over hostile responses', async () => {
    const answer = fc.record({
      status: fc.constantFrom(200, 200, 200, 404, 500, 302),
      type: fc.constantFrom(...CONTENT_TYPES),
      body: fc.oneof(
        mutatedArb([...CAPS, ...LISTKEYS, ...HEADS]).map((m) => m.bytes),
        fc.uint8Array({ maxLength: 100 }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(mutatedArb(CAPS), answer, answer, cutsArb(), async (caps, batch, listkeys, cuts) => {
        const session = fakeSession(
          [{ status: 200, type: 'application/mercurial-0.1', body: caps.bytes }, batch, listkeys],
          cuts,
        );
        await parsesOrSluiceError(async () => {
          const peer = await HttpPeer.connect('http://127.0.0.1:1/repo', session);
          peer.protoCaps();
          try {
            await peer.headsAndKnown(['0'.repeat(40)]);
          } finally {
            await peer.listkeys('bookmarks');
          }
        }, 'peer');
      }),
      params(300),
    );
  });

  it('getbundle responses: media type, engine header and compressed bodies, mutated', async () => {
    await fc.assert(
      fc.asyncProperty(
        mutatedArb(GETBUNDLE),
        fc.constantFrom(
          'application/mercurial-0.2',
          'application/mercurial-0.1',
          'application/mercurial-0.2; x',
        ),
        cutsArb(),
        async (m, type, cuts) => {
          const session = fakeSession(
            [
              { status: 200, type: 'application/mercurial-0.1', body: CAPS[0]! },
              { status: 200, type, body: m.bytes },
            ],
            cuts,
          );
          await parsesOrSluiceError(async () => {
            const peer = await HttpPeer.connect('http://127.0.0.1:1/repo', session);
            const res = await peer.getbundle({ bundlecaps: ['HG20'], cg: false, stream: true });
            await drainBundle2(new ByteSource(res.body));
          }, 'getbundle');
        },
      ),
      params(250),
    );
  });
});

describe('fuzz: small response parsers', () => {
  it('heads, known, batch escapes, listkeys, branchmap-like node lists', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          mutatedArb([...HEADS, ...LISTKEYS]).map((m) => latin1(m.bytes)),
          fc.string({ maxLength: 120 }),
        ),
        fc.nat({ max: 5 }),
        async (text, count) => {
          // what each parser accepted holds its format's rules, and re-encodes to the input
          const heads = await outcomeOf(() => HttpPeer.decodeHeads(text), 'heads');
          if (heads.ok) {
            expect(heads.value.every(isHexNode)).toBe(true);
            expect(`${encodeNodeList(heads.value)}\n`).toBe(text);
          }
          const known = await outcomeOf(() => HttpPeer.decodeKnown(text, count), 'known');
          if (known.ok) expect(known.value.map((k) => (k ? '1' : '0')).join('')).toBe(text);
          const batch = await outcomeOf(() => text.split(';').map(unescapeBatchArg), 'batch');
          if (batch.ok) expect(batch.value.map(escapeBatchArg).map(unescapeBatchArg)).toEqual(batch.value);
          const keys = await outcomeOf(() => decodeKeys(text), 'listkeys');
          if (keys.ok) {
            for (const [k, v] of keys.value) expect(`${k}${v}`).not.toMatch(/[\t\r\n]/);
            expect(decodeKeys(encodeKeys([...keys.value]))).toEqual(keys.value);
          }
          const nodes = await outcomeOf(() => decodeNodeList(text.trim(), 'nodes'), 'nodes');
          if (nodes.ok) {
            expect(nodes.value.every(isHexNode)).toBe(true);
            expect(encodeNodeList(nodes.value)).toBe(text.trim());
          }
          const qs = await outcomeOf(() => parseQs(text), 'qs');
          if (qs.ok) for (const values of qs.value.values()) expect(values.length).toBeGreaterThan(0);
          const roots = await outcomeOf(() => parsePhaseRoots(text), 'phaseroots');
          if (roots.ok) for (const nodes of roots.value.values()) expect(nodes.every(isHexNode)).toBe(true);
          await parsesOrSluiceError(() => parseCloneBundlesManifest(text), 'clonebundles');
          await parsesOrSluiceError(() => parseBundleSpec(text), 'bundlespec');
        },
      ),
      params(500),
    );
  });

  it('WWW-Authenticate challenges (a server header): parsed without throwing, and any chosen Digest signs', async () => {
    const piece = fc.oneof(
      fc.constantFrom(
        'Basic',
        'Digest',
        'Bearer',
        'realm=',
        'nonce="',
        '"',
        ',',
        ' ',
        '=',
        '\\',
        'qop="auth"',
        'algorithm=SHA-256',
        'stale=true',
        'algorithm=MD5-sess',
      ),
      fc.string({ maxLength: 12 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 40 }), async (pieces) => {
        const header = pieces.join('');
        // a hang would end the run at the case timeout: how fast it parses is the benchmarks' business
        const chosen = chooseChallenge(parseChallenges(header));
        if (chosen?.scheme === 'digest') {
          const value = new DigestSession(chosen, { user: 'u"\\', password: 'p' }).authorization(
            'GET',
            '/?cmd=x',
          );
          // the header we send is one well-formed Digest challenge-shaped value: it parses back
          expect(parseChallenges(value)[0]!.params.get('username')).toBe('u"\\');
        }
      }),
      params(1000),
    );
  });

  it('bookmarks and phase-heads binary parts', async () => {
    const bookmark = fc.record({
      node: fc.uint8Array({ minLength: 20, maxLength: 20 }),
      name: fc.uint8Array({ maxLength: 30 }),
      lie: fc.integer({ min: -2, max: 1000 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(bookmark, { maxLength: 5 }),
        fc.uint8Array({ maxLength: 100 }),
        fc.nat({ max: 30 }),
        async (marks, random, cut) => {
          const encoded = Buffer.concat(
            marks.map((b) => {
              const len = Buffer.alloc(2);
              len.writeUInt16BE(Math.max(0, Math.min(0xffff, b.name.length + (b.lie > 100 ? b.lie : 0))));
              return Buffer.concat([Buffer.from(b.node), len, Buffer.from(b.name)]);
            }),
          );
          const cutShort = encoded.subarray(0, Math.max(0, encoded.length - cut));
          for (const [bytes, label] of [
            [cutShort, 'bookmarks'],
            [Buffer.from(random), 'bookmarks random'],
          ] as const) {
            // accepted: records that encode back to exactly the bytes read (nothing skipped)
            const marks = await outcomeOf(() => decodeBinaryBookmarks(bytes), label);
            if (marks.ok) expect(encodeBookmarks(marks.value)).toEqual(bytes);
          }
          const phases = await outcomeOf(() => decodePhaseHeads(Buffer.from(random)), 'phase-heads');
          if (phases.ok) {
            expect(phases.value.length * 24).toBe(random.length);
            expect(encodePhaseHeads(phases.value)).toEqual(Buffer.from(random));
          }
        },
      ),
      params(500),
    );
  });

  it('the obsolete listkeys namespace: mutated dumps and the format-0 markers inside them', async () => {
    // markers of each shape (successors, parents none/one/two/unrecorded, metadata) as hg dumps them
    const fm1 = (succs: number, parents: number | null, meta: string[]): Buffer => {
      const kv = meta.map((x) => Buffer.from(x));
      const n = 1 + succs + (parents ?? 0);
      const head = Buffer.alloc(19);
      head.writeDoubleBE(1764650000.5, 4);
      head.writeInt16BE(-60, 12);
      [head[16], head[17], head[18]] = [succs, parents ?? 3, meta.length / 2];
      const m = Buffer.concat([
        head,
        Buffer.alloc(20 * n, 0x5a),
        Buffer.from(kv.map((b) => b.length)),
        ...kv,
      ]);
      m.writeUInt32BE(m.length, 0);
      return m;
    };
    const markers = readObsstoreV1(
      Buffer.concat([
        Buffer.of(1),
        fm1(1, null, ['user', 'a']),
        fm1(0, 0, ['operation', 'prune', 'user', 'b']),
        fm1(2, 2, []),
        fm1(0, 1, ['note', 'x'.repeat(200)]),
      ]),
    );
    const dump = Buffer.from(listkeysObsolete(markers)[0]![1], 'latin1');
    const payload = b85decode(dump.toString('latin1'));
    await fc.assert(
      fc.asyncProperty(mutatedArb([dump]), mutatedArb([payload]), async (text, binary) => {
        const dumped = await outcomeOf(
          () => markersFromListkeys(new Map([['dump0', text.bytes.toString('latin1')]])),
          'dump',
        );
        if (dumped.ok) expectWholeMarkers(dumped.value!);
        const read = await outcomeOf(() => readMarkersAsV1(binary.bytes), 'markers');
        if (read.ok) expectWholeMarkers(read.value);
      }),
      params(500),
    );
  });
});
