// The tool probes: a missing tool skips the tests that need it, naming it, and under CI=true fails
// them instead. Shown on a real vitest run of test/support/env.fixture.ts whose PATH has no hg.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  IN_CI,
  MAKE_CORPUS,
  parseCiWithout,
  REQUIRE_ELECTRON,
  ROOT,
  SHARED,
  TOOL_NAMES,
  required,
  toolPath,
} from '../../support/env';

describe('tool probes', () => {
  it('one probe per external tool the tests use', () => {
    expect(TOOL_NAMES).toEqual(
      expect.arrayContaining(['hg', 'nginx', 'sshd', 'chromium', 'cc', 'zstd', 'electron']),
    );
  });

  it('CI=true requires every tool but Electron, which SLUICE_REQUIRE_ELECTRON=1 requires', () => {
    const without = parseCiWithout(process.env.SLUICE_CI_WITHOUT);
    expect(
      TOOL_NAMES.filter((t) => t !== 'electron').every((t) => required(t) === (IN_CI && !without.has(t))),
    ).toBe(true);
    expect(required('electron')).toBe(REQUIRE_ELECTRON);
  });

  // a CI run fails here too for a missing tool, whatever the tests that need it do
  it.runIf(IN_CI || REQUIRE_ELECTRON)('CI=true: every required external tool is installed', () => {
    expect(TOOL_NAMES.filter((t) => required(t) && toolPath(t) === undefined)).toEqual([]);
  });

  it('SLUICE_CI_WITHOUT names tools a runner lacks; a name that is no tool is refused', () => {
    expect([...parseCiWithout(' nginx, sshd ,,')]).toEqual(['nginx', 'sshd']);
    expect(parseCiWithout(undefined).size).toBe(0);
    expect(() => parseCiWithout('nginx,ngnix')).toThrow('SLUICE_CI_WITHOUT names no tool: ngnix');
  });

  it('the bench tools are reached through the sibling ../shared of the repository root', () => {
    expect(SHARED).toBe(join(ROOT, '..', 'shared'));
    expect(MAKE_CORPUS.startsWith(SHARED)).toBe(true);
    expect(readFileSync(join(ROOT, 'package.json'), 'utf8')).toContain('"name": "sluice"');
  });
});

describe('without hg on PATH (a child vitest on test/support/env.fixture.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-probe-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // PATH holds node only: hg (and everything else) is missing
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  const config = join(dir, 'vitest.config.mjs');
  writeFileSync(config, `export default { test: { include: ['test/support/env.fixture.ts'] } };\n`);

  function run(ci: boolean, without?: string) {
    const out = join(dir, `report-${ci}-${without ?? ''}.json`);
    const env: NodeJS.ProcessEnv = { PATH: bin, HOME: dir };
    if (ci) env.CI = 'true';
    if (without) env.SLUICE_CI_WITHOUT = without;
    const r = spawnSync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--config',
        config,
        '--root',
        ROOT,
        '--reporter=json',
        `--outputFile=${out}`,
      ],
      { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 },
    );
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      testResults: {
        status: string;
        message: string;
        assertionResults: { fullName: string; status: string }[];
      }[];
    };
    return { status: r.status, file: report.testResults[0]! };
  }

  it('locally: the tests that need hg are skipped, with hg named in their title', () => {
    const { status, file } = run(false);
    expect(status).toBe(0);
    expect(file.assertionResults).toEqual(
      [{ fullName: 'needs hg (skipped: hg not installed) hg runs', status: 'skipped' }].map((a) =>
        expect.objectContaining(a),
      ),
    );
  });

  it('under CI=true: the same run fails, saying hg is not installed', () => {
    const { status, file } = run(true);
    expect(status).not.toBe(0);
    expect(file.status).toBe('failed');
    expect(file.message).toContain('CI=true: hg not installed');
  });

  it('under CI=true with SLUICE_CI_WITHOUT=hg: skipped again, the title naming the runner', () => {
    const { status, file } = run(true, 'hg');
    expect(status).toBe(0);
    expect(file.assertionResults).toEqual([
      expect.objectContaining({
        fullName: 'needs hg (skipped: hg not installed on this runner (SLUICE_CI_WITHOUT)) hg runs',
        status: 'skipped',
      }),
    ]);
  });
});
