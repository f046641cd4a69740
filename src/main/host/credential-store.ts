// Saved server credentials ("Remember" in the sign-in dialog), per origin (scheme://host:port), for
// later clones and pulls of that host. The whole list is one file in the data dir encrypted by the
// host's cipher (Electron's safeStorage: the OS keychain's key, main process only), written to a
// temporary file (mode 0600) renamed over the old one (json-file.ts writeFileAtomic). Without a cipher (the web host, or a Linux
// session without a keyring) nothing is ever stored and `available` says why.

import { readFile } from 'node:fs/promises';
import type { SavedCredential } from '../../shared/ipc';
import type { Credentials } from './engine-api';
import { writeFileAtomic } from './engine-api';

/** What safeStorage offers, as the host needs it. */
export interface CredentialCipher {
  encrypt(plain: string): Buffer;
  decrypt(data: Buffer): string;
}

interface Entry extends Credentials {
  origin: string;
  savedAt: number;
}

const FILE_VERSION = 1;

/** scheme://host[:port] of a URL (the key credentials are saved under), or null when it is not http(s). */
export function credentialOrigin(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null;
  } catch {
    return null;
  }
}

export class CredentialStore {
  private entries: Map<string, Entry> | null = null;
  private writing: Promise<void> = Promise.resolve();

  /** `cipher` null: storing is unavailable, for `reason`. */
  constructor(
    readonly file: string,
    private readonly cipher: CredentialCipher | null,
    readonly reason = 'this host cannot encrypt credentials',
    private readonly now: () => number = Date.now,
  ) {}

  get available(): boolean {
    return this.cipher !== null;
  }

  async list(): Promise<SavedCredential[]> {
    return [...(await this.load()).values()]
      .map(({ origin, user, savedAt }) => ({ origin, user, savedAt }))
      .sort((a, b) => a.origin.localeCompare(b.origin));
  }

  async lookup(url: string): Promise<Credentials | undefined> {
    const origin = credentialOrigin(url);
    const e = origin ? (await this.load()).get(origin) : undefined;
    return e && { user: e.user, password: e.password };
  }

  /** Saves credentials for `url`'s origin; false when this host cannot store them. */
  async remember(url: string, credentials: Credentials): Promise<boolean> {
    const origin = credentialOrigin(url);
    if (!this.cipher || !origin) return false;
    (await this.load()).set(origin, {
      origin,
      user: credentials.user,
      password: credentials.password,
      savedAt: this.now(),
    });
    await this.save();
    return true;
  }

  async forget(origin: string): Promise<void> {
    const entries = await this.load();
    if (!entries.delete(origin)) return;
    await this.save();
  }

  flushed(): Promise<void> {
    return this.writing;
  }

  private async load(): Promise<Map<string, Entry>> {
    if (this.entries) return this.entries;
    const entries = new Map<string, Entry>();
    if (this.cipher) {
      try {
        const parsed = JSON.parse(this.cipher.decrypt(await readFile(this.file))) as {
          version: number;
          entries: Entry[];
        };
        if (parsed.version === FILE_VERSION && Array.isArray(parsed.entries)) {
          for (const e of parsed.entries) {
            if (
              e &&
              typeof e.origin === 'string' &&
              typeof e.user === 'string' &&
              typeof e.password === 'string'
            )
              entries.set(e.origin, e);
          }
        }
      } catch (e) {
        // missing, or encrypted with another key (another OS user, a reset keychain): start empty
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
          console.warn(`credentials: ${this.file} cannot be read; starting empty`);
      }
    }
    this.entries ??= entries;
    return this.entries;
  }

  private save(): Promise<void> {
    const cipher = this.cipher;
    if (!cipher) return Promise.resolve();
    const data = cipher.encrypt(
      JSON.stringify({ version: FILE_VERSION, entries: [...(this.entries ?? new Map()).values()] }),
    );
    const write = () => writeFileAtomic(this.file, data, 0o600);
    this.writing = this.writing.then(write, write);
    return this.writing;
  }
}
