import { describe, expect, it } from 'vitest';
import { posix, win32 } from 'node:path';
import {
  isTrustedSender,
  LIMITS,
  validateInvoke,
  validateJobRequest,
  ValidationError,
  warmUpValidation,
} from '../../../src/main/host/validate';
import { INVOKE_CHANNELS } from '../../../src/shared/ipc';

const abs = posix.isAbsolute;

function rejects(fn: () => unknown, pattern: RegExp): void {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, 'expected a ValidationError').toBeInstanceOf(ValidationError);
  expect((thrown as ValidationError).code).toBe('USAGE');
  expect((thrown as Error).message).toMatch(pattern);
}

describe('validateJobRequest', () => {
  it('accepts each kind and copies only known fields', () => {
    expect(
      validateJobRequest(
        {
          kind: 'apply',
          bundlePath: '/b/x.hg',
          dest: '/r',
          verify: true,
          closer: { backgroundClose: 'on', closeThreads: 8 },
        },
        abs,
      ),
    ).toEqual({
      kind: 'apply',
      bundlePath: '/b/x.hg',
      dest: '/r',
      verify: true,
      closer: { backgroundClose: 'on', closeThreads: 8 },
    });
    expect(
      validateJobRequest(
        {
          kind: 'clone',
          url: 'https://hg.example.org/repo',
          dest: '/c',
          stream: 'v2',
          cloneBundles: false,
          obsmarkers: true,
        },
        abs,
      ),
    ).toEqual({
      kind: 'clone',
      url: 'https://hg.example.org/repo',
      dest: '/c',
      stream: 'v2',
      cloneBundles: false,
      obsmarkers: true,
    });
    rejects(
      () => validateJobRequest({ kind: 'clone', url: 'https://h/r', dest: '/c', obsmarkers: 'yes' }, abs),
      /obsmarkers/,
    );
    expect(
      validateJobRequest(
        { kind: 'clone', url: 'https://h/r', dest: '/c', pull: true, idleTimeoutMs: 5000 },
        abs,
      ),
    ).toEqual({
      kind: 'clone',
      url: 'https://h/r',
      dest: '/c',
      pull: true,
      idleTimeoutMs: 5000,
    });
    rejects(
      () => validateJobRequest({ kind: 'clone', url: 'https://h/r', dest: '/c', pull: 1 }, abs),
      /pull/,
    );
    rejects(
      () => validateJobRequest({ kind: 'clone', url: 'https://h/r', dest: '/c', connectTimeoutMs: 5 }, abs),
      /connectTimeoutMs: must be between/,
    );
    expect(
      validateJobRequest(
        { kind: 'pull', repo: '/r', source: 'http://h/r', update: true, incoming: false },
        abs,
      ),
    ).toEqual({
      kind: 'pull',
      repo: '/r',
      source: 'http://h/r',
      update: true,
      incoming: false,
    });
    expect(validateJobRequest({ kind: 'pull', repo: '/r' }, abs)).toEqual({ kind: 'pull', repo: '/r' });
    rejects(() => validateJobRequest({ kind: 'pull', repo: 'r' }, abs), /repo: not an absolute path/);
    rejects(
      () => validateJobRequest({ kind: 'pull', repo: '/r', source: 'ftp://h/r' }, abs),
      /only http and https/,
    );
    rejects(() => validateJobRequest({ kind: 'pull', repo: '/r', source: 'rel/r' }, abs), /absolute path/);
    expect(validateJobRequest({ kind: 'pull', repo: '/r', source: 'file:///srv/r' }, abs)).toMatchObject({
      source: 'file:///srv/r',
    });
    rejects(() => validateJobRequest({ kind: 'pull', repo: '/r', dest: '/x' }, abs), /unknown field "dest"/);
    expect(
      validateJobRequest(
        { kind: 'bundle', repo: '/r', out: '/o.hg', type: 'packed1', compression: 'none', chunkSize: 4096 },
        abs,
      ),
    ).toMatchObject({ chunkSize: 4096 });
    expect(validateJobRequest({ kind: 'verify', repo: '/r' }, abs)).toEqual({ kind: 'verify', repo: '/r' });
    expect(
      validateJobRequest({ kind: 'update', repo: '/r', rev: 'stable', closer: { closeThreads: 4 } }, abs),
    ).toEqual({
      kind: 'update',
      repo: '/r',
      rev: 'stable',
      closer: { closeThreads: 4 },
    });
    expect(
      validateJobRequest(
        { kind: 'clone', url: 'https://h/r', dest: '/c', update: true, updateRev: '@' },
        abs,
      ),
    ).toMatchObject({ update: true, updateRev: '@' });
    expect(
      validateJobRequest({ kind: 'apply', bundlePath: '/b.hg', dest: '/c', update: false }, abs),
    ).toMatchObject({ update: false });
    rejects(
      () => validateJobRequest({ kind: 'clone', url: 'https://h/r', dest: '/c', update: 'yes' }, abs),
      /update: expected true or false/,
    );
    rejects(
      () => validateJobRequest({ kind: 'clone', url: 'https://h/r', dest: '/c', updateRev: 'a\nb' }, abs),
      /updateRev/,
    );
    rejects(
      () => validateJobRequest({ kind: 'update', repo: '/r', rev: '' }, abs),
      /rev: expected a revision/,
    );
    rejects(() => validateJobRequest({ kind: 'update', repo: 'r' }, abs), /repo: not an absolute path/);
    rejects(
      () => validateJobRequest({ kind: 'update', repo: '/r', dest: '/x' }, abs),
      /unknown field "dest"/,
    );
  });

  it('refuses relative paths, NUL bytes and empty paths', () => {
    rejects(
      () => validateJobRequest({ kind: 'apply', bundlePath: 'x.hg', dest: '/r' }, abs),
      /bundlePath: not an absolute path/,
    );
    rejects(
      () => validateJobRequest({ kind: 'apply', bundlePath: '/x.hg', dest: '/r\u0000/etc' }, abs),
      /dest: control characters/,
    );
    rejects(() => validateJobRequest({ kind: 'verify', repo: '' }, abs), /repo: empty path/);
    rejects(
      () => validateJobRequest({ kind: 'verify', repo: 'a'.repeat(LIMITS.pathChars + 1) }, abs),
      /longer than/,
    );
    rejects(() => validateJobRequest({ kind: 'verify', repo: 42 }, abs), /repo: expected a string/);
  });

  it('uses the platform rule for absolute paths', () => {
    expect(validateJobRequest({ kind: 'verify', repo: 'C:\\Users\\me\\repo' }, win32.isAbsolute)).toEqual({
      kind: 'verify',
      repo: 'C:\\Users\\me\\repo',
    });
    rejects(
      () => validateJobRequest({ kind: 'verify', repo: 'C:\\Users\\me\\repo' }, posix.isAbsolute),
      /not an absolute path/,
    );
  });

  it('allows http, https and ssh URLs and absolute local repositories', () => {
    for (const url of ['javascript:alert(1)', 'ftp://x/y']) {
      rejects(
        () => validateJobRequest({ kind: 'clone', url, dest: '/c' }, abs),
        /only http and https|not a valid URL/,
      );
    }
    // a local repository (hg's localpeer): absolute, as the app has no current directory to resolve against
    for (const url of ['/srv/repo', 'file:///srv/repo', 'file://localhost/srv/repo'])
      expect(validateJobRequest({ kind: 'clone', url, dest: '/c' }, abs)).toMatchObject({ url });
    for (const url of ['srv/repo', './repo', 'file:repo', 'file://host/srv/repo', '/srv/re\npo'])
      rejects(
        () => validateJobRequest({ kind: 'clone', url, dest: '/c' }, abs),
        /absolute path|control characters/,
      );
    expect(
      validateJobRequest({ kind: 'clone', url: 'ssh://hg@host:2222//srv/repo', dest: '/c' }, abs),
    ).toMatchObject({
      url: 'ssh://hg@host:2222//srv/repo',
    });
    // what ssh would take for an option, a password, no path, spaces: refused before the engine
    for (const url of ['ssh://-oProxyCommand=x/r', 'ssh://u:pw@h/r', 'ssh://h', 'ssh://h/a b'])
      rejects(
        () => validateJobRequest({ kind: 'clone', url, dest: '/c' }, abs),
        /unsafe|password|parse|whitespace/,
      );
    rejects(() => validateJobRequest({ kind: 'clone', url: 'not a url', dest: '/c' }, abs), /absolute path/);
    rejects(
      () => validateJobRequest({ kind: 'clone', url: 'http://host/re po', dest: '/c' }, abs),
      /whitespace/,
    );
  });

  it('checks ranges, enums and unknown fields', () => {
    rejects(
      () => validateJobRequest({ kind: 'bundle', repo: '/r', out: '/o', chunkSize: 100 }, abs),
      /chunkSize: must be between 512/,
    );
    rejects(
      () => validateJobRequest({ kind: 'bundle', repo: '/r', out: '/o', chunkSize: 32 * 1024 * 1024 }, abs),
      /chunkSize: must be between/,
    );
    rejects(
      () => validateJobRequest({ kind: 'bundle', repo: '/r', out: '/o', chunkSize: 4096.5 }, abs),
      /expected an integer/,
    );
    rejects(
      () => validateJobRequest({ kind: 'bundle', repo: '/r', out: '/o', compression: 'bzip2' }, abs),
      /compression: expected one of/,
    );
    rejects(
      () =>
        validateJobRequest({ kind: 'apply', bundlePath: '/b', dest: '/r', closer: { closeThreads: 0 } }, abs),
      /closeThreads: must be between 1/,
    );
    rejects(
      () => validateJobRequest({ kind: 'apply', bundlePath: '/b', dest: '/r', closer: { threads: 4 } }, abs),
      /unknown field "threads"/,
    );
    rejects(
      () => validateJobRequest({ kind: 'apply', bundlePath: '/b', dest: '/r', extra: 1 }, abs),
      /unknown field "extra"/,
    );
    rejects(() => validateJobRequest({ kind: 'serve', repo: '/r' }, abs), /kind: expected one of/);
    rejects(() => validateJobRequest([], abs), /expected an object/);
    rejects(() => validateJobRequest(null, abs), /expected an object/);
  });

  it('refuses objects that are not plain data', () => {
    class Sneaky {
      kind = 'verify';
      repo = '/r';
    }
    rejects(() => validateJobRequest(new Sneaky(), abs), /expected an object/);
  });
});

describe('warmUpValidation', () => {
  it("runs the accepting path of job:start under both platforms' rules", () => {
    expect(warmUpValidation(posix.isAbsolute)).toBe(true);
    expect(warmUpValidation(win32.isAbsolute)).toBe(true);
  });

  it('returns false instead of throwing when no sample path is absolute', () => {
    expect(warmUpValidation(() => false)).toBe(false);
    // a rule that takes the root but not the paths under it: the requests are refused
    expect(warmUpValidation((p) => p === '/')).toBe(false);
  });
});

describe('validateInvoke', () => {
  it('has a validator for every channel of the contract', () => {
    for (const channel of INVOKE_CHANNELS) {
      // Every channel refuses a wrong argument list instead of passing it through.
      expect(() => validateInvoke(channel, [1, 2, 3, 4, 5], abs)).toThrow(ValidationError);
    }
  });

  it('refuses unknown channels and non-array arguments', () => {
    rejects(() => validateInvoke('fs:readFile', [], abs), /unknown channel/);
    rejects(() => validateInvoke('job:list', 'x', abs), /arguments must be an array/);
  });

  it('checks the library fetch and queue channels: intervals, counts, unknown fields', () => {
    expect(validateInvoke('job:move', ['job-1', 0], abs)).toEqual(['job-1', 0]);
    rejects(() => validateInvoke('job:move', ['job-1', -1], abs), /between/);
    rejects(() => validateInvoke('job:move', ['job-1', 1.5], abs), /integer/);
    expect(validateInvoke('library:fetch', ['/r'], abs)).toEqual(['/r']);
    rejects(() => validateInvoke('library:fetch', ['r'], abs), /not an absolute path/);
    expect(validateInvoke('library:signIn', ['/r'], abs)).toEqual(['/r']);
    rejects(() => validateInvoke('library:signIn', ['r'], abs), /not an absolute path/);
    expect(validateInvoke('library:setFetchInterval', ['/r', 15], abs)).toEqual(['/r', 15]);
    expect(validateInvoke('library:setFetchInterval', ['/r', null], abs)).toEqual(['/r', null]);
    rejects(() => validateInvoke('library:setFetchInterval', ['/r', 7], abs), /one of/);
    expect(validateInvoke('library:setSettings', [{ fetchInterval: 60, maxTransfers: 4 }], abs)).toEqual([
      { fetchInterval: 60, maxTransfers: 4 },
    ]);
    rejects(() => validateInvoke('library:setSettings', [{ maxTransfers: 0 }], abs), /between/);
    rejects(() => validateInvoke('library:setSettings', [{ fetchConcurrency: 1e9 }], abs), /between/);
    rejects(() => validateInvoke('library:setSettings', [{ pollMs: 1 }], abs), /pollMs/);
    rejects(() => validateInvoke('library:fetchAll', [1], abs), /argument/);
  });

  it('validates arguments channel by channel', () => {
    expect(validateInvoke('job:start', [{ kind: 'verify', repo: '/r' }, 'my label'], abs)).toEqual([
      { kind: 'verify', repo: '/r' },
      'my label',
    ]);
    expect(validateInvoke('job:start', [{ kind: 'verify', repo: '/r' }, undefined], abs)).toEqual([
      { kind: 'verify', repo: '/r' },
    ]);
    rejects(
      () => validateInvoke('job:start', [{ kind: 'verify', repo: '/r' }, 'x'.repeat(201)], abs),
      /label: longer than 200/,
    );
    expect(validateInvoke('job:cancel', ['job-1'], abs)).toEqual(['job-1']);
    rejects(() => validateInvoke('job:cancel', ['../x'], abs), /identifier/);
    rejects(() => validateInvoke('bundle:inspect', ['rel/x.hg'], abs), /not an absolute path/);
    rejects(() => validateInvoke('server:probe', ['ftp://x/y'], abs), /only http and https/);
    expect(validateInvoke('server:probe', ['file:///x'], abs)).toEqual(['file:///x']);
    rejects(() => validateInvoke('shell:openExternal', ['javascript:alert(1)'], abs), /only http and https/);
    expect(validateInvoke('dialog:pickDirectory', [], abs)).toEqual([]);
    expect(validateInvoke('dialog:pickDirectory', ['/home'], abs)).toEqual(['/home']);
    rejects(() => validateInvoke('file:writeText', ['../evil.txt', 'x'], abs), /file name, not a path/);
    expect(validateInvoke('file:writeText', ['log.txt', 'hello'], abs)).toEqual(['log.txt', 'hello']);
    expect(validateInvoke('credentials:answer', ['r1', null], abs)).toEqual(['r1', null]);
    expect(validateInvoke('credentials:answer', ['r1', { user: 'u', password: 'p' }], abs)).toEqual([
      'r1',
      { user: 'u', password: 'p' },
    ]);
    rejects(
      () => validateInvoke('credentials:answer', ['r1', { user: 'u', password: 'p', token: 't' }], abs),
      /unknown field "token"/,
    );
    rejects(() => validateInvoke('app:info', [1], abs), /expected 0 argument/);
  });
});

describe('validation messages', () => {
  function message(fn: () => unknown): string {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      return (e as Error).message;
    }
    throw new Error('expected a ValidationError');
  }

  it('name the argument and the field path where the problem is', () => {
    expect(
      message(() =>
        validateInvoke(
          'job:start',
          [{ kind: 'apply', bundlePath: '/b', dest: '/r', closer: { closeThreads: 4, threads: 4 } }],
          abs,
        ),
      ),
    ).toBe('job:start request.closer: unknown field "threads"');
    expect(
      message(() =>
        validateInvoke(
          'job:start',
          [{ kind: 'apply', bundlePath: '/b', dest: '/r', closer: { closeThreads: 65 } }],
          abs,
        ),
      ),
    ).toBe('job:start request.closer.closeThreads: must be between 1 and 64');
    expect(message(() => validateInvoke('job:log', ['j1', 0, 2001], abs))).toBe(
      'job:log count: must be between 0 and 2000',
    );
    expect(message(() => validateInvoke('job:start', [{ kind: 'serve' }], abs))).toMatch(
      /^job:start request.kind: expected one of "apply", "clone"/,
    );
    expect(message(() => validateJobRequest({ kind: 'verify' }, abs))).toBe('request: missing field "repo"');
    expect(message(() => validateInvoke('credentials:answer', ['r1', []], abs))).toBe(
      'credentials:answer answer: expected an object',
    );
    expect(message(() => validateInvoke('downloads:remove', ['xyz'], abs))).toBe(
      'downloads:remove key: expected 32 hex digits',
    );
    expect(message(() => validateInvoke('credentials:forget', ['https://h/x'], abs))).toBe(
      'credentials:forget origin: expected scheme://host[:port]',
    );
  });

  it('keep an omitted optional argument omitted', () => {
    expect(validateInvoke('job:log', ['j1', 0, 10, undefined], abs)).toEqual(['j1', 0, 10]);
    expect(validateInvoke('job:log', ['j1', 0, 10, 'err'], abs)).toEqual(['j1', 0, 10, 'err']);
    expect(validateInvoke('credentials:answer', ['r1', null, true], abs)).toEqual(['r1', null, true]);
    expect(validateInvoke('downloads:remove', [], abs)).toEqual([]);
    expect(message(() => validateInvoke('job:log', ['j1', 0], abs))).toBe(
      'job:log: expected 3 to 4 arguments, got 2',
    );
  });
});

describe('isTrustedSender', () => {
  const packaged = {
    webContentsId: 3,
    origin: 'file://',
    fileRoot: 'file:///opt/Sluice/resources/app.asar/out/renderer/',
  };
  const dev = { webContentsId: 3, origin: 'http://localhost:5173' };

  it('accepts only our window top frame at our origin', () => {
    expect(
      isTrustedSender(
        {
          url: 'file:///opt/Sluice/resources/app.asar/out/renderer/index.html',
          isTopFrame: true,
          webContentsId: 3,
        },
        packaged,
      ),
    ).toBe(true);
    expect(isTrustedSender({ url: 'http://localhost:5173/', isTopFrame: true, webContentsId: 3 }, dev)).toBe(
      true,
    );
  });

  it('refuses iframes, other windows, other origins and other files', () => {
    expect(
      isTrustedSender(
        {
          url: 'file:///opt/Sluice/resources/app.asar/out/renderer/index.html',
          isTopFrame: false,
          webContentsId: 3,
        },
        packaged,
      ),
    ).toBe(false);
    expect(
      isTrustedSender(
        {
          url: 'file:///opt/Sluice/resources/app.asar/out/renderer/index.html',
          isTopFrame: true,
          webContentsId: 4,
        },
        packaged,
      ),
    ).toBe(false);
    expect(
      isTrustedSender({ url: 'file:///tmp/evil.html', isTopFrame: true, webContentsId: 3 }, packaged),
    ).toBe(false);
    expect(
      isTrustedSender({ url: 'https://evil.example/', isTopFrame: true, webContentsId: 3 }, packaged),
    ).toBe(false);
    expect(isTrustedSender({ url: 'http://localhost:5174/', isTopFrame: true, webContentsId: 3 }, dev)).toBe(
      false,
    );
    expect(isTrustedSender({ url: 'not a url', isTopFrame: true, webContentsId: 3 }, dev)).toBe(false);
    expect(isTrustedSender(null, dev)).toBe(false);
  });

  it('compares file paths decoded, and without case where the platform ignores it', () => {
    const win = {
      webContentsId: 1,
      origin: 'file://',
      fileRoot: 'file:///C:/Program%20Files/Sluice/resources/app.asar/out/renderer/',
      caseInsensitivePaths: true,
    };
    expect(
      isTrustedSender(
        {
          url: 'file:///c:/Program Files/Sluice/resources/app.asar/out/renderer/index.html',
          isTopFrame: true,
          webContentsId: 1,
        },
        win,
      ),
    ).toBe(true);
    expect(
      isTrustedSender(
        {
          url: 'file:///C:/Program%20Files/Sluice/resources/app.asar/out/other/index.html',
          isTopFrame: true,
          webContentsId: 1,
        },
        win,
      ),
    ).toBe(false);
    expect(
      isTrustedSender(
        {
          url: 'file:///c:/program files/sluice/resources/app.asar/out/renderer/index.html',
          isTopFrame: true,
          webContentsId: 1,
        },
        { ...win, caseInsensitivePaths: false },
      ),
    ).toBe(false);
  });
});

describe('library channels', () => {
  it('take one absolute path and nothing else', () => {
    expect(validateInvoke('library:add', ['/home/u/repo'])).toEqual(['/home/u/repo']);
    expect(() => validateInvoke('library:remove', ['repo'])).toThrow(/not an absolute path/);
    expect(() => validateInvoke('library:trash', ['/a', '/b'])).toThrow(/expected 1 argument/);
    expect(() => validateInvoke('dest:check', [42])).toThrow(/expected a string/);
    expect(validateInvoke('library:list', [])).toEqual([]);
  });
});
