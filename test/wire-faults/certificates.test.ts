// hg's ways with an untrusted https certificate, against a real TLS server on 127.0.0.1 (the
// wire-faults proxy with the test CA's server certificate, in front of sluice serve): refused with
// CERTIFICATE and the certificate's identity; trusted by a pinned fingerprint or a CA file named in
// the hgrc; --insecure once with a warning; a wrong fingerprint refused. hg itself accepts the
// same fingerprint line, so the format is hg's.

import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/main/engine/errors';
import { JobContext } from '../../src/main/engine/context/job-context';
import { runJob } from '../../src/main/engine/job/run-job';
import { startServer, type RunningServer } from '../../src/main/engine/operations/serve/http-server';
import { extractFixture, hgAsync, missing, removeDir, skipNote, tempDir } from '../interop/wire-support';
import { sluice } from '../interop/cli-support';
import { TLS, scriptedServer, type ScriptedServer } from './harness';

let work = '';
let backend: RunningServer;
let front: ScriptedServer;
/** what openssl and browsers show for the server's certificate, in hg's `sha256:AB:…` form */
let fingerprint = '';
let n = 0;

beforeAll(async () => {
  work = tempDir('certs');
  backend = await startServer({ repo: extractFixture('default', work) });
  front = await scriptedServer(backend.url, () => false, { tls: true });
  fingerprint = `sha256:${new X509Certificate(readFileSync(join(__dirname, 'tls', 'server.pem'))).fingerprint256}`;
});

afterAll(async () => {
  await front?.close();
  await backend?.close();
  if (work) removeDir(work);
});

/** An HGRCPATH holding `text`, so the CLI reads only it. */
function hgrc(text: string): NodeJS.ProcessEnv {
  const path = join(work, `hgrc${n++}`);
  writeFileSync(path, text);
  return { HGRCPATH: path };
}

const dest = (): string => join(work, `clone${n++}`);

describe('an untrusted https certificate', () => {
  it('fails with CERTIFICATE, its subject, issuer and fingerprint, and nothing at DEST', async () => {
    const d = dest();
    const e = await runJob({ kind: 'clone', url: front.url, dest: d }, new JobContext()).then(
      () => null,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(SluiceError);
    const err = e as SluiceError;
    expect(err.code).toBe('CERTIFICATE');
    expect(err.details).toMatchObject({
      host: '127.0.0.1',
      subject: 'CN=localhost',
      issuer: 'CN=Sluice Test CA',
      fingerprint,
    });
    expect(existsSync(d)).toBe(false);

    const cli = await sluice(['clone', front.url, dest()], { env: hgrc('') });
    expect(cli.code).not.toBe(0);
    const [abort, hint] = cli.stderr.split('\n');
    expect(abort).toBe(
      'abort: error: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to verify the first certificate',
    );
    expect(hint).toContain(`set hostsecurity.127.0.0.1:fingerprints=${fingerprint}`);
    expect(hint).toContain('--insecure');
  });

  it('is trusted when its fingerprint is pinned in the hgrc, as hg trusts it', async () => {
    const env = hgrc(`[hostsecurity]\n127.0.0.1:fingerprints = ${fingerprint}\n`);
    const d = dest();
    const ok = await sluice(['clone', '-U', front.url, d], { env });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    if (!missing('hg')) {
      expect((await hgAsync(['verify', '-q'], { cwd: d })).status).toBe(0);
      const r = await hgAsync([
        'clone',
        '-U',
        '-q',
        '--config',
        `hostsecurity.127.0.0.1:fingerprints=${fingerprint}`,
        front.url,
        dest(),
      ]);
      expect(r.status, r.stderr).toBe(0);
    }
  }, 60_000);

  it('is refused when another fingerprint is pinned, with hg words', async () => {
    const other = `sha256:${'AB:'.repeat(31)}AB`;
    const cli = await sluice(['clone', '-U', front.url, dest()], {
      env: hgrc(`[hostsecurity]\n127.0.0.1:fingerprints = ${other}\n`),
    });
    expect(cli.stderr).toBe(
      `abort: certificate for 127.0.0.1 has unexpected fingerprint ${fingerprint}\n(check hostsecurity configuration)\n`,
    );
  });

  it('is trusted through hostsecurity.HOST:verifycertsfile and web.cacerts naming its CA', async () => {
    for (const text of [
      `[hostsecurity]\n127.0.0.1:verifycertsfile = ${TLS.ca}\n`,
      `[web]\ncacerts = ${TLS.ca}\n`,
    ]) {
      const cli = await sluice(['clone', '-U', front.url, dest()], { env: hgrc(text) });
      expect(cli.stderr, text).toBe('');
      expect(cli.code).toBe(0);
    }
  }, 60_000);

  it('--insecure connects this once, with hg warning', async () => {
    const cli = await sluice(['clone', '-U', '--insecure', front.url, dest()], { env: hgrc('') });
    expect(cli.code).toBe(0);
    expect(cli.stderr).toBe(
      'warning: connection security to 127.0.0.1 is disabled per current settings; communication is susceptible to eavesdropping and tampering\n',
    );
  }, 60_000);
});

describe.skipIf(missing('hg'))(`hg's verdict on the same certificate${skipNote('hg')}`, () => {
  it('hg refuses it too', async () => {
    const r = await hgAsync(['clone', '-U', front.url, dest()]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/CERTIFICATE_VERIFY_FAILED/);
  });
});
