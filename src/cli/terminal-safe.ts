// Text from outside (a server, a bundle, an error message) made safe to print to a terminal; its own
// module so that commands which run no job (status) need not load the job runner to use it.

import { BIDI_ALL } from '../shared/shown-text';

/**
 * Text a server or a bundle chose (a `remote:` line, an abort message) as the terminal should
 * show it: control characters other than newline and tab written as `\xNN`, so a hostile remote
 * cannot move the cursor, retitle the window or rewrite earlier lines with escape sequences (hg
 * prints them raw); bidi embeddings, overrides and isolates as `\uNNNN`, so none reorders the line.
 */
export function terminalSafe(text: string): string {
  return text
    .replace(
      // eslint-disable-next-line no-control-regex -- the control characters are what is matched
      /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g,
      (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
    )
    .replace(BIDI_ALL, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}
