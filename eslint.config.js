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

const ENGINE_MESSAGE =
  'src/main/engine runs in plain Node (worker thread, CLI): no Electron, React or renderer code';
const RENDERER_MESSAGE =
  'src/renderer runs in a sandboxed page: no Node modules, no Electron (use window.sluice)';

export default tseslint.config(
  {
    ignores: [
      'out/**',
      'dist/**',
      'node_modules/**',
      'test/fixtures/**',
      'test-results/**',
      'playwright-report/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['src/main/engine/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [ELECTRON, REACT, folders('renderer', 'preload')].map((regex) => ({
            regex,
            message: ENGINE_MESSAGE,
          })),
        },
      ],
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
