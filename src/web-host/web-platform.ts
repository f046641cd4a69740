// HostPlatform for the web host: the page has no native dialogs or shell, so pickers answer null
// (the UI then offers its text fields), opening a path or URL is only logged, and exports are
// written to the data dir's exports folder (the path is returned, so the UI can show it).

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HostPlatform } from '../main/host/engine-host';

export class WebPlatform implements HostPlatform {
  readonly host = 'web' as const;
  readonly platform = process.platform;

  constructor(
    readonly version: string,
    readonly defaultCloneDir: string,
    private readonly exportsDir: string,
  ) {}

  async pickDirectory(): Promise<string | null> {
    return null;
  }

  async pickBundle(): Promise<string | null> {
    return null;
  }

  async openPath(path: string): Promise<void> {
    console.log(`web host: open ${path} (no file manager from a browser page)`);
  }

  async showItemInFolder(path: string): Promise<void> {
    console.log(`web host: show ${path} (no file manager from a browser page)`);
  }

  async openExternal(url: string): Promise<void> {
    console.log(`web host: open ${url} (no shell from a browser page)`);
  }

  async writeText(suggestedName: string, text: string): Promise<string | null> {
    await mkdir(this.exportsDir, { recursive: true });
    const dot = suggestedName.lastIndexOf('.');
    const stem = dot > 0 ? suggestedName.slice(0, dot) : suggestedName;
    const ext = dot > 0 ? suggestedName.slice(dot) : '';
    for (let i = 1; ; i++) {
      const path = join(this.exportsDir, i === 1 ? suggestedName : `${stem}-${i}${ext}`);
      try {
        await writeFile(path, text, { flag: 'wx' });
        console.log(`web host: saved ${path}`);
        return path;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
  }
}
