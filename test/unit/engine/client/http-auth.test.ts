import { describe, expect, it } from 'vitest';
import {
  DigestSession,
  chooseChallenge,
  isStale,
  parseChallenges,
} from '../../../../src/main/engine/client/http-auth';

/** The fields of a `Digest k=v, k="v"` Authorization value. */
function fields(authorization: string): Record<string, string> {
  expect(authorization.startsWith('Digest ')).toBe(true);
  const [c] = parseChallenges(authorization);
  return Object.fromEntries(c!.params);
}

describe('parseChallenges / chooseChallenge', () => {
  it('reads several challenges in one header, quoted strings with escapes and commas', () => {
    const cs = parseChallenges(
      'Basic realm="hg, \\"repo\\"", Digest realm="r", qop="auth,auth-int", nonce="n=1", algorithm=MD5, NewScheme token68==',
    );
    expect(cs.map((c) => c.scheme)).toEqual(['basic', 'digest', 'newscheme']);
    expect(cs[0]!.params.get('realm')).toBe('hg, "repo"');
    expect(Object.fromEntries(cs[1]!.params)).toEqual({
      realm: 'r',
      qop: 'auth,auth-int',
      nonce: 'n=1',
      algorithm: 'MD5',
    });
  });

  it('prefers Digest wherever it is offered, falls back to Basic', () => {
    expect(chooseChallenge(parseChallenges('Basic realm="a", Digest realm="b", nonce="x"'))!.scheme).toBe(
      'digest',
    );
    // a digest challenge Sluice cannot answer: unknown algorithm, or auth-int only
    expect(
      chooseChallenge(parseChallenges('Digest realm="b", nonce="x", algorithm=SHA3, Basic realm="a"'))!
        .scheme,
    ).toBe('basic');
    expect(chooseChallenge(parseChallenges('Digest realm="b", nonce="x", qop="auth-int"'))).toBeNull();
    expect(chooseChallenge(parseChallenges('Negotiate'))).toBeNull();
    expect(isStale(parseChallenges('Digest realm="b", nonce="y", stale=TRUE')[0]!)).toBe(true);
    expect(isStale(parseChallenges('Digest realm="b", nonce="y"')[0]!)).toBe(false);
  });
});

describe('DigestSession', () => {
  it('RFC 2617 §3.5: MD5, qop=auth', () => {
    const [c] = parseChallenges(
      'Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"',
    );
    const s = new DigestSession(c!, { user: 'Mufasa', password: 'Circle Of Life' }, () => '0a4f113b');
    expect(fields(s.authorization('GET', '/dir/index.html'))).toEqual({
      username: 'Mufasa',
      realm: 'testrealm@host.com',
      nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
      uri: '/dir/index.html',
      response: '6629fae49393a05397450978507c4ef1',
      algorithm: 'MD5',
      opaque: '5ccc069c403ebaf9f0171e9517f40e41',
      qop: 'auth',
      nc: '00000001',
      cnonce: '0a4f113b',
    });
    // the nonce count goes up with each request on the same nonce
    expect(fields(s.authorization('GET', '/dir/index.html')).nc).toBe('00000002');
  });

  it('RFC 7616 §3.9.1: SHA-256 and MD5 for the same challenge', () => {
    const header = (algorithm: string): string =>
      `Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=${algorithm}, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`;
    const creds = { user: 'Mufasa', password: 'Circle of Life' };
    const cnonce = (): string => 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ';
    const sha = new DigestSession(parseChallenges(header('SHA-256'))[0]!, creds, cnonce);
    expect(fields(sha.authorization('GET', '/dir/index.html')).response).toBe(
      '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
    );
    const md5 = new DigestSession(parseChallenges(header('MD5'))[0]!, creds, cnonce);
    expect(fields(md5.authorization('GET', '/dir/index.html')).response).toBe(
      '8ca523f5e9506fed4657c9700eebdbec',
    );
  });

  it('a challenge without qop (RFC 2069) signs without nc/cnonce', () => {
    const [c] = parseChallenges('Digest realm="r", nonce="abc"');
    const f = fields(new DigestSession(c!, { user: 'u', password: 'p' }).authorization('GET', '/?cmd=heads'));
    expect(f.qop).toBeUndefined();
    expect(f.nc).toBeUndefined();
    // H(H(u:r:p):abc:H(GET:/?cmd=heads)) with MD5, computed independently (Python hashlib)
    expect(f.response).toBe('b2177bcb40d8f27b818cad213b5f31a6');
  });
});
