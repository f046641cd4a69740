// Bounds on what one client may make a Sluice server hold, shared by both transports (server.ts:
// HTTP, ssh-server.ts: `serve --stdio`) so a hostile client meets the same limits over either. hg
// has none of them (its commands are as costly per item); its clients stay far below them, a
// hostile one would otherwise make one request cost gigabytes or minutes: a batch of a million
// `capabilities` (a ~600-byte reply each, from ~13 bytes asked), `between` pairs each walking the
// whole history, a getbundle with a listkeys part per comma, a session that never says anything.

/** commands in one batch (hg's clients batch a handful: discovery's heads + known, lookups) */
export const BATCH_MAX_COMMANDS = 4096;
/** a batch reply's size */
export const BATCH_MAX_REPLY = 32 << 20;
/** `between` pairs in one call (hg's legacy discovery asks 10 at a time) */
export const BETWEEN_MAX_PAIRS = 256;
/** getbundle `listkeys` namespaces and `bundlecaps` entries (hg's client sends 1-3 of each) */
export const GETBUNDLE_MAX_LIST = 256;
/**
 * One command's arguments in all: an HTTP POST body (httppostargs), the values of an ssh
 * command's `key <len>` pairs. A `known` of 300k nodes is 12 MB; a getbundle with 100k common
 * heads ~4 MB.
 */
export const REQUEST_ARGS_MAX = 16 << 20;
/**
 * Arguments of one command (hg's getbundle sends about 10): query string, X-HgArg headers and POST
 * body together, an ssh command's `* N` pairs, a batched command's `k=v,...`. Counted before
 * anything is split: 16 MiB of `k1=&k2=&...` made ~400 MB of strings and map entries.
 */
export const REQUEST_ARGS_COUNT_MAX = 1000;
/**
 * HTTP request line and headers together: hg's client sends a command's arguments as X-HgArg-N
 * headers of `httpheader` bytes each (a getbundle with hundreds of common heads is tens of KB); hg
 * serve takes up to 100 headers. Node's default (16 KiB) would refuse such a pull with 431.
 */
export const REQUEST_HEADERS_MAX = 128 << 10;
/** an ssh command line or `key <len>` argument line (a name and a decimal length) */
export const REQUEST_LINE_MAX = 4096;
/**
 * Nothing read from or written to a client for this long ends its connection (HTTP) or session
 * (ssh): a client that stops reading a reply, a request that never ends. Also the time one whole
 * request may take to arrive (Node's http requestTimeout; over ssh from the end of the previous
 * reply to the last argument byte), so a client trickling a byte now and then cannot hold a
 * connection either.
 */
export const SERVER_IDLE_TIMEOUT_MS = 300_000;
/**
 * An ssh session with no command started for this long is ended. Longer than the idle timeout:
 * unlike an HTTP client, an ssh client cannot reconnect mid-operation, and hg's holds its session
 * through local work between commands (a legacy stream clone writes the whole store between
 * stream_out and its getbundle; a clone checks out before closing it).
 */
export const SSH_SESSION_IDLE_MS = 3_600_000;
