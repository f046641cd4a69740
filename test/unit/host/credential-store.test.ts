import { afterEach, describe, expect, it } from 'vitest';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  CredentialStore,
  credentialOrigin,
  type CredentialCipher,
} from '../../../src/main/host/credential-store';
import { removeDir, tempDirMaker } from '../../support/env';

const makeTempDir = tempDirMaker('credentials');
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(removeDir));

/** A stand-in for safeStorage: AES-256-GCM under a key that lives only in this test. */
function testCipher(key = randomBytes(32)): CredentialCipher {
  return {
    encrypt(plain) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return Buffer.concat([iv, c.getAuthTag(), body]);
    },
    decrypt(data) {
      const d = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12));
      d.setAuthTag(data.subarray(12, 28));
      return Buffer.concat([d.update(data.subarray(28)), d.final()]).toString('utf8');
    },
  };
}

describe('CredentialStore', () => {
  it('keeps credentials per origin, encrypted on disk (0600), across instances; forgets one', async () => {
    const dir = makeTempDir('a');
    dirs.push(dir);
    const file = join(dir, 'credentials.enc');
    const cipher = testCipher();
    const a = new CredentialStore(file, cipher, undefined, () => 42);
    expect(
      await a.remember('https://hg.example.org:8443/repo/a?x=1', { user: 'ada', password: 's3cret-pw' }),
    ).toBe(true);
    await a.remember('http://other.example/', { user: 'bea', password: 'pw2' });
    const raw = readFileSync(file);
    expect(raw.includes(Buffer.from('s3cret-pw'))).toBe(false);
    expect(raw.includes(Buffer.from('ada'))).toBe(false);
    if (process.platform !== 'win32') expect(statSync(file).mode & 0o777).toBe(0o600);
    const b = new CredentialStore(file, cipher);
    expect(await b.lookup('https://hg.example.org:8443/another/repo')).toEqual({
      user: 'ada',
      password: 's3cret-pw',
    });
    expect(await b.lookup('https://hg.example.org/repo')).toBeUndefined(); // another port, another origin
    expect(await b.list()).toEqual([
      { origin: 'http://other.example', user: 'bea', savedAt: expect.any(Number) },
      { origin: 'https://hg.example.org:8443', user: 'ada', savedAt: 42 },
    ]);
    await b.forget('http://other.example');
    expect((await new CredentialStore(file, cipher).list()).map((e) => e.origin)).toEqual([
      'https://hg.example.org:8443',
    ]);
    // another key (another OS user, a reset keychain) reads nothing rather than failing
    expect(await new CredentialStore(file, testCipher()).list()).toEqual([]);
  });

  it('stores nothing without a cipher and says why', async () => {
    const dir = makeTempDir('none');
    dirs.push(dir);
    const store = new CredentialStore(
      join(dir, 'credentials.enc'),
      null,
      'the web host never stores credentials',
    );
    expect(store.available).toBe(false);
    expect(await store.remember('https://h/', { user: 'u', password: 'p' })).toBe(false);
    expect(await store.list()).toEqual([]);
    expect(credentialOrigin('ssh://h/x')).toBeNull();
  });
});
