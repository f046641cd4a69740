// ESLint's Node API with the repository's own config (what `npm run lint` runs), on code placed by
// path anywhere in the tree: the lint tests show a rule failing on a probe file.
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { ROOT } from '../support/env';

// The probes exist only as text, so the type-aware promise rules (which need the file in the
// TypeScript project) are off here; `npm run lint` runs them on every real file.
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      '@typescript-eslint/no-misused-promises': 'off',
      '@typescript-eslint/await-thenable': 'off',
    },
  },
});

/** The rules `code` breaks as the file `path` (relative to the repository), as `rule: message`. */
export async function broken(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result!.messages.map((m) => `${m.ruleId ?? 'fatal'}: ${m.message}`);
}
