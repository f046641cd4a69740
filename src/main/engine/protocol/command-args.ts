// The argument names of hg's wire protocol v1 commands as wireprotov1server declares them (`*`:
// any others). The ssh framing sends and reads arguments in this order, so the client (ssh-peer)
// and the server (serve's command table) share this one table.

export const COMMAND_ARGS = {
  capabilities: '',
  hello: '',
  between: 'pairs',
  heads: '',
  known: 'nodes *',
  branchmap: '',
  listkeys: 'namespace',
  clonebundles: '',
  // hg 6.5: the manifest again, under a name that may take arguments in later versions
  clonebundles_manifest: '*',
  lookup: 'key',
  batch: 'cmds *',
  stream_out: '',
  getbundle: '*',
  unbundle: 'heads',
  pushkey: 'namespace key old new',
  branches: 'nodes',
  changegroup: 'roots',
  changegroupsubset: 'bases heads',
  debugwireargs: 'one two *',
  protocaps: 'caps',
} as const satisfies Record<string, string>;

export type WireCommandName = keyof typeof COMMAND_ARGS;

/** The declared arguments of `name`, or undefined for a command hg does not have. */
export function commandArgs(name: string): string | undefined {
  return Object.hasOwn(COMMAND_ARGS, name) ? COMMAND_ARGS[name as WireCommandName] : undefined;
}
