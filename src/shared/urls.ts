// URLs as Sluice records or shows them: never with the credentials a user typed into them.

/**
 * A URL without any user info: what `paths.default` records, and what the host shows and
 * keeps of a job's source (history, the job list). hg.clone drops only the password;
 * Sluice also drops the user name because access tokens are commonly passed in that field. An
 * ssh:// URL keeps its user: it is the login name ssh needs to pull again, and it carries no
 * password (refused when the URL is opened).
 */
export function withoutCredentials(url: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*@)?(.*)$/s.exec(url);
  if (!m || !m[2]) return url;
  if (/^ssh:\/\//i.test(url) && !m[2].includes(':')) return url;
  return m[1]! + m[3]!;
}
