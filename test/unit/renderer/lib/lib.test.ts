import { describe, expect, it } from 'vitest';
import { explainError, toUiError } from '../../../../src/renderer/src/lib/errors';
import {
  formatBytes,
  formatClock,
  formatDuration,
  mebibytesPerSec,
} from '../../../../src/renderer/src/lib/format';
import {
  joinPath,
  repoNameFromBundle,
  repoNameFromUrl,
  uniquePath,
} from '../../../../src/renderer/src/lib/paths';
import { validateCloneUrl, validateDestination } from '../../../../src/renderer/src/store/requests';

describe('errors', () => {
  it("a server's bidi overrides in a message become U+FFFD; its lines stay", () => {
    expect(toUiError({ code: 'REMOTE', message: 'remote: \u202eevil\u202c\nnext' }).message).toBe(
      'remote: \ufffdevil\ufffd\nnext',
    );
  });

  it('reads the code from an object, an Electron invoke message, or a bracketed code', () => {
    expect(toUiError({ code: 'BAD_MAGIC', message: 'not a bundle' })).toEqual({
      code: 'BAD_MAGIC',
      message: 'not a bundle',
    });
    expect(
      toUiError(
        new Error("Error invoking remote method 'bundle:inspect': SluiceError: [TRUNCATED] ended early"),
      ),
    ).toEqual({ code: 'TRUNCATED', message: 'ended early' });
    expect(toUiError(new Error('NETWORK: connect ECONNREFUSED 127.0.0.1:1'))).toEqual({
      code: 'NETWORK',
      message: 'connect ECONNREFUSED 127.0.0.1:1',
    });
    expect(toUiError(new Error('plain failure'))).toEqual({ code: 'UNKNOWN', message: 'plain failure' });
    expect(toUiError('x')).toEqual({ code: 'UNKNOWN', message: 'x' });
  });
  it('has human text for every engine code and a fallback', () => {
    expect(explainError('DEST_EXISTS').title).toBe('The destination already exists');
    expect(explainError('DEST_EXISTS').retryable).toBe(false);
    expect(explainError('WHATEVER').title).toBe('Something went wrong');
  });
});

describe('format', () => {
  it('formats sizes, clocks and durations', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(150 * 1024 * 1024)).toBe('150 MiB');
    expect(formatClock(65_000)).toBe('1:05');
    expect(formatClock(3_723_000)).toBe('1:02:03');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(1240)).toBe('1.24 s');
    expect(mebibytesPerSec(10 * 1048576, 2000)).toBe(5);
  });
});

describe('paths', () => {
  it('derives names and joins for the host platform', () => {
    expect(repoNameFromUrl('https://hg.example.org/projects/mozilla-central/')).toBe('mozilla-central');
    expect(repoNameFromUrl('http://127.0.0.1:8000/')).toBe('127.0.0.1');
    expect(repoNameFromUrl('http://h/repo.hg')).toBe('repo');
    expect(repoNameFromBundle('/tmp/stream-v2.hg')).toBe('stream-v2');
    // bundle extensions are not part of the repository's name, however many
    expect(repoNameFromBundle('/tmp/stream.packed')).toBe('stream');
    expect(repoNameFromBundle('/tmp/repo.hg.zst')).toBe('repo');
    expect(repoNameFromBundle('/srv/project/.hg')).toBe('project');
    expect(joinPath('/home/u/', 'r')).toBe('/home/u/r');
    expect(joinPath('C:\\Users\\u', 'r', 'win32')).toBe('C:\\Users\\u\\r');
    expect(uniquePath('/a', new Set(['/a', '/a-2']))).toBe('/a-3');
  });
  it('validates clone URLs and destinations', () => {
    expect(validateCloneUrl('http://127.0.0.1:8000/repo')).toBeNull();
    expect(validateCloneUrl('')).toMatch(/Enter/);
    expect(validateCloneUrl('ssh://hg@host/repo')).toBeNull();
    expect(validateCloneUrl('ssh://hg@host:2222//srv/repo')).toBeNull();
    expect(validateCloneUrl('ssh://hg:secret@host/repo')).toMatch(/password/);
    expect(validateCloneUrl('ssh://host')).toMatch(/path/);
    expect(validateCloneUrl('ftp://h/r')).toMatch(/http/);
    expect(validateCloneUrl('not a url')).toMatch(/not a URL/);
    expect(validateCloneUrl('/srv/hg/repo')).toBeNull();
    expect(validateCloneUrl('C:\\src\\repo')).toBeNull();
    expect(validateCloneUrl('file:///srv/hg/repo')).toBeNull();
    expect(validateCloneUrl('file:repo')).toMatch(/file:\/\/\//);
    expect(repoNameFromUrl('/srv/hg/project/')).toBe('project');
    expect(repoNameFromUrl('C:\\src\\project')).toBe('project');
    expect(repoNameFromUrl('file:///srv/hg/project.hg')).toBe('project');
    expect(validateDestination('/home/u/r')).toBeNull();
    expect(validateDestination('C:\\src\\r')).toBeNull();
    expect(validateDestination('relative/r')).toMatch(/absolute/);
  });
});

describe('explainFailure', () => {
  it('names uncommitted changes and the file, from the engine message of an update refused as hg refuses it', async () => {
    const { explainFailure } = await import('../../../../src/renderer/src/lib/errors');
    // operations/update/uncommitted.ts `uncommittedChanges(...)`'s message
    const ex = explainFailure({
      code: 'USAGE',
      message: 'uncommitted changes in 1 file (M src/a.txt); commit or revert them first',
    });
    expect(ex.title).toBe('Uncommitted changes: src/a.txt is modified');
    expect(ex.title).not.toMatch(/invalid/);
    const many = explainFailure({
      code: 'USAGE',
      message: 'uncommitted changes in 22 files (M a, ! b, and 20 more); commit or revert them first',
    });
    expect(many.title).toBe('Uncommitted changes in 22 files');
    expect(explainFailure({ code: 'USAGE', message: 'outstanding uncommitted merge' }).title).toBe(
      'Uncommitted merge',
    );
    expect(explainFailure({ code: 'USAGE', message: 'bad field' }).title).toBe('The request is invalid');
  });
});
