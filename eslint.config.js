import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// The layers (README, Architecture), enforced here rather than by convention: the engine runs in
// plain Node (a worker thread, the CLI) and the renderer in a sandboxed page. test/lint/layers.test.ts
// shows a violating file failing.
const builtins = builtinModules.filter((m) => !m.startsWith('_')).join('|');
/** Module names as regular expressions (an import's whole specifier, subpaths included). */
const ELECTRON = '^electron(/.*)?$';
const REACT = '^(react|react-dom|zustand)(/.*)?$';
const NODE = `^(node:.*|(${builtins})(/.*)?)$`;
/** A relative import reaching up into another layer's folder. */
const folders = (...names) => `^(\\.\\./)+(.*/)?(${names.join('|')})(/.*)?$`;

/** no-restricted-imports misses import() and require(): the same names, as syntax selectors. */
function noDynamicLoad(regexes, message) {
  return regexes.flatMap((re) => {
    const literal = `/${re.replace(/\//g, '\\/')}/`;
    return [
      { selector: `ImportExpression[source.value=${literal}]`, message },
      { selector: `CallExpression[callee.name='require'][arguments.0.value=${literal}]`, message },
    ];
  });
}

/**
 * Opening a file to append or update in place, outside repo/vfs.ts: a file of a repository cloned
 * from a local path shares its inode with the source's (hard links), and only the vfs breaks the
 * link first (hg's vfs.__call__). test/lint/vfs.test.ts shows a violating file failing.
 */
const VFS_MESSAGE =
  'open repository files to append or update through repo/vfs.ts (openForUpdate): it breaks hard links first, as hg does';
const IN_PLACE_FLAGS = '/[a+]/';
const inPlaceWrites = [
  `CallExpression[callee.name=/^(openSync|open)$/][arguments.1.value=${IN_PLACE_FLAGS}]`,
  `CallExpression[callee.property.name=/^(openSync|open)$/][arguments.1.value=${IN_PLACE_FLAGS}]`,
  `Property[key.name=/^flags?$/][value.value=${IN_PLACE_FLAGS}]`,
  'MemberExpression[property.name=/^O_(RDWR|WRONLY|APPEND)$/]',
  'CallExpression[callee.name=/^(appendFile|appendFileSync|truncate|truncateSync)$/]',
  'CallExpression[callee.property.name=/^(appendFile|appendFileSync)$/]',
  // a path truncated in place (a handle's truncate() is of a file its open() was checked for)
  'CallExpression[callee.object.name=/^(fs|fsp|promises)$/][callee.property.name=/^truncate(Sync)?$/]',
].map((selector) => ({ selector, message: VFS_MESSAGE }));

const ENGINE_MESSAGE =
  'src/main/engine runs in plain Node (worker thread, CLI): no Electron, React or renderer code';
const RENDERER_MESSAGE =
  'src/renderer runs in a sandboxed page: no Node modules, no Electron (use window.sluice)';

const MECHANISM_MESSAGE =
  "the engine's mechanisms (formats, codecs, revlog, store, repo, changegroup, working copy, closer, protocol, client) sit below the operations and the job runner: take what you need as a parameter (context/job-context.ts)";
const OPERATION_MESSAGE = 'operations sit below the job runner (job/ dispatches to them, never the reverse)';

/** The engine's rules for `files`: plain Node, and the layer imports `layer` forbids. */
function engineRules(files, ignores, layer) {
  return {
    files,
    ignores,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...[ELECTRON, REACT, folders('renderer', 'preload')].map((regex) => ({
              regex,
              message: ENGINE_MESSAGE,
            })),
            ...layer,
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        ...noDynamicLoad([ELECTRON, REACT], ENGINE_MESSAGE),
        ...inPlaceWrites,
      ],
    },
  };
}

export default tseslint.config(
  {
    ignores: [
      'out/**',
      'dist/**',
      'node_modules/**',
      'test/fixtures/**',
      'test-results/**',
      'playwright-report/**',
      // vendored third-party code, kept as upstream wrote it (its LICENSE beside it)
      'src/main/engine/codec/vendor/**/*.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Type-aware rules for the promise mistakes the compiler lets through: a promise nobody awaits
    // (its rejection is lost), one passed where a callback's result is ignored, await on a non-promise.
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  engineRules(
    ['src/main/engine/**'],
    ['src/main/engine/operations/**', 'src/main/engine/job/**'],
    [{ regex: folders('operations', 'job'), message: MECHANISM_MESSAGE }],
  ),
  engineRules(['src/main/engine/operations/**'], [], [{ regex: folders('job'), message: OPERATION_MESSAGE }]),
  engineRules(['src/main/engine/job/**'], [], []),
  {
    // the vfs itself: the one place that opens repository files to append or update
    files: ['src/main/engine/repo/vfs.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...noDynamicLoad([ELECTRON, REACT], ENGINE_MESSAGE)],
    },
  },
  {
    files: ['src/renderer/**'],
    ignores: ['**/*.test.ts', '**/*.test.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [NODE, ELECTRON, folders('main', 'preload', 'web-host')].map((regex) => ({
            regex,
            message: RENDERER_MESSAGE,
          })),
        },
      ],
      'no-restricted-syntax': ['error', ...noDynamicLoad([NODE, ELECTRON], RENDERER_MESSAGE)],
    },
  },
);
