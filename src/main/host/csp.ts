// The renderer's Content-Security-Policy, one definition for every place it is set: Electron's
// session headers, the web host's responses and the <meta> the build puts into index.html. The
// renderer is React built by Vite: its scripts and styles are files of its own origin, so nothing
// inline, nothing remote, no eval. `connect-src 'self'` also covers the web host's WebSocket
// (CSP3: 'self' matches ws: on the same host and port).

export interface CspOptions {
  /** dev server (electron-vite dev): React refresh needs an inline preamble and a WebSocket */
  dev?: boolean;
  /** <meta> policies cannot carry frame-ancestors (browsers ignore it there, with a warning) */
  forMeta?: boolean;
  extraConnectSrc?: string[];
}

export function contentSecurityPolicy(options: CspOptions = {}): string {
  const directives: [string, string[]][] = [
    ['default-src', ["'self'"]],
    ['script-src', options.dev ? ["'self'", "'unsafe-inline'"] : ["'self'"]],
    ['style-src', options.dev ? ["'self'", "'unsafe-inline'"] : ["'self'"]],
    ['img-src', ["'self'", 'data:', 'blob:']],
    ['font-src', ["'self'", 'data:']],
    ['connect-src', ["'self'", ...(options.dev ? ['ws:'] : []), ...(options.extraConnectSrc ?? [])]],
    ['worker-src', ["'self'", 'blob:']],
    ['object-src', ["'none'"]],
    ['base-uri', ["'none'"]],
    ['form-action', ["'none'"]],
  ];
  if (!options.forMeta) directives.push(['frame-ancestors', ["'none'"]]);
  return directives.map(([name, values]) => `${name} ${values.join(' ')}`).join('; ');
}
