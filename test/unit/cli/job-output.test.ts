import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { SluiceEvent } from '../../../src/shared/events';
import type { CliIO } from '../../../src/cli/command';
import { EventRenderer } from '../../../src/cli/job-output';
import { terminalSafe } from '../../../src/cli/terminal-safe';

function io(): { io: CliIO; out: () => string; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let o = '';
  let e = '';
  stdout.on('data', (b: Buffer) => (o += b.toString()));
  stderr.on('data', (b: Buffer) => (e += b.toString()));
  return {
    io: { stdout, stderr, signal: new AbortController().signal } as unknown as CliIO,
    out: () => o,
    err: () => e,
  };
}

describe('text a remote chose, on the terminal', () => {
  it('escape sequences, carriage returns and C1 controls are shown as \\xNN; newlines and tabs stay', () => {
    expect(terminalSafe('remote: \x1b]0;owned\x07hi\r\x1b[2Kfake line\ttab\nnext \u009b31m')).toBe(
      'remote: \\x1b]0;owned\\x07hi\\x0d\\x1b[2Kfake line\ttab\nnext \\x9b31m',
    );
    expect(terminalSafe('adding changesets: é ü 漢')).toBe('adding changesets: é ü 漢');
  });

  it('bidi overrides and isolates are shown as \\uNNNN: none reorders the rest of the line', () => {
    expect(terminalSafe('abort: \u202egnp.exe\u202c and \u2066x\u2069')).toBe(
      'abort: \\u202egnp.exe\\u202c and \\u2066x\\u2069',
    );
  });

  it('remote: lines and warnings from the engine are written through it', async () => {
    const t = io();
    const r = new EventRenderer({}, t.io);
    const log = (level: 'info' | 'warn', message: string): SluiceEvent =>
      ({ type: 'log', level, message, jobId: 'j', time: 0 }) as SluiceEvent;
    r.event(log('info', 'remote: \x1b[31mred\x1b[0m'));
    r.event(log('warn', 'bookmark \x1b]0;t\x07 ignored'));
    await new Promise((res) => setImmediate(res));
    expect(t.out()).toBe('remote: \\x1b[31mred\\x1b[0m\n');
    expect(t.err()).toBe('warning: bookmark \\x1b]0;t\\x07 ignored\n');
  });
});
