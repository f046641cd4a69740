// Text from outside (a link, a server's changeset) as the app shows it: control characters never
// typed by a person, and bidi embeddings, overrides and isolates, which reorder the text displayed
// after them (an author and date, the rest of a link), are refused or replaced.

/** Bidi embeddings, overrides and isolates, as a character class's ranges. */
const BIDI_RANGES = '\\u202a-\\u202e\\u2066-\\u2069';
/** C0 and C1 controls, line and paragraph separators, bidi embeddings/overrides and isolates. */
export const CONTROL_OR_BIDI = new RegExp(`[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029${BIDI_RANGES}]`);
const CONTROL_OR_BIDI_ALL = new RegExp(CONTROL_OR_BIDI.source, 'g');
/** The bidi characters alone: a message keeps its newlines and tabs. */
export const BIDI_ALL = new RegExp(`[${BIDI_RANGES}]`, 'g');

/**
 * `text` with every bidi embedding, override and isolate as U+FFFD: an error message a server
 * worded cannot reorder what is shown after it.
 */
export function withoutBidi(text: string): string {
  return text.replace(BIDI_ALL, '\ufffd');
}

/** `text` with tabs as spaces and every other CONTROL_OR_BIDI as U+FFFD, at most `max` characters. */
export function shownText(text: string, max: number): string {
  const clean = text.replace(CONTROL_OR_BIDI_ALL, (c) => (c === '\t' ? ' ' : '\ufffd'));
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max - 1);
  // never half a surrogate pair
  return `${/[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}
