// Every revlog failure is a SluiceError('REVLOG') whose details name the revlog and, when known, the
// revision, plus a stable `problem` key tests and UIs can match without parsing the message.
import { SluiceError } from '../errors';

export type RevlogProblemKind =
  | 'unknown-version'
  | 'unknown-flags'
  | 'corrupted-index' // entries do not tile the file (inline) or the size is not a multiple of 64
  | 'truncated-entry'
  | 'bad-length' // negative compressed length, text size beyond the 2 GiB limit
  | 'bad-offset' // rev 0 offset not 0, offsets overlapping / going backwards
  | 'base-out-of-range'
  | 'link-out-of-range'
  | 'parent-out-of-range'
  | 'rev-out-of-range'
  | 'partial-read' // chunk beyond the end of the data file
  | 'missing-data-file'
  | 'decompress' // corrupt compressed chunk / unknown compression type
  | 'bad-delta' // mpatch could not apply a delta
  | 'size-mismatch' // reconstructed text length differs from the index
  | 'node-mismatch' // SHA-1 of parents + text differs from the node id
  | 'censored' // node mismatch on a censored revision whose text is a tombstone (hg CensoredNodeError)
  | 'revision-flags'
  | 'limit'
  // the writer's own: a changegroup's revision it cannot store, or a transaction out of step
  | 'bad-node'
  | 'unknown-parent'
  | 'truncated'
  | 'transaction'
  | 'unknown-delta-base';

export interface RevlogErrorDetails {
  revlog: string;
  rev?: number;
  problem: RevlogProblemKind;
  /** the message as hg words it, without Sluice's revlog/rev prefix (verify prints this one) */
  reason: string;
  [key: string]: unknown;
}

type ErrorExtra = { rev?: number; [key: string]: unknown };

function buildRevlogError(
  shown: string,
  revlog: string,
  problem: RevlogProblemKind,
  reason: string,
  extra: ErrorExtra,
) {
  const details: RevlogErrorDetails = { revlog, problem, reason, ...extra };
  return new SluiceError('REVLOG', shown, details);
}

export function revlogError(
  revlog: string,
  problem: RevlogProblemKind,
  message: string,
  extra: ErrorExtra = {},
): SluiceError {
  return buildRevlogError(message, revlog, problem, message, extra);
}

/** A revlogError whose message names the revlog first (`data/foo.i: ...`), as the writer reports. */
export function namedRevlogError(
  revlog: string,
  problem: RevlogProblemKind,
  message: string,
  extra: ErrorExtra = {},
): SluiceError {
  return buildRevlogError(`${revlog}: ${message}`, revlog, problem, message, extra);
}

/** hg's short(): the first 12 hex digits of a node id. */
export function shortNode(node: Uint8Array): string {
  return Buffer.from(node.buffer, node.byteOffset, Math.min(node.length, 6)).toString('hex');
}
