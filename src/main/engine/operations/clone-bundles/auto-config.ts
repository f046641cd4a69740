// The `[clone-bundles]` section of the served repository's hgrc, as hg 6.5's clonebundles extension
// reads it (auto-generate.formats, auto-generate.on-change, trigger.*, upload-command,
// delete-command, url-template), plus Sluice's built-in S3 uploader (upload-url = s3://BUCKET/PREFIX).

import { SluiceError } from '../../errors';
import type { RepoConfig } from '../../store/hgrc';
import { parseAutoBundleSpec, type AutoBundleSpec } from './bundle-specs';

const SECTION = 'clone-bundles';

export interface AutoGenConfig {
  formats: AutoBundleSpec[];
  onChange: boolean;
  /** trigger.below-bundled-ratio (default 0.95) */
  belowBundledRatio: number;
  /** trigger.revs (default 1000) */
  triggerRevs: number;
  uploadCommand?: string;
  deleteCommand?: string;
  /** s3://BUCKET/PREFIX: upload with the built-in S3 client instead of upload-command */
  uploadUrl?: string;
  /** public URL of a bundle, `{basename}` substituted */
  urlTemplate?: string;
}

function number(config: RepoConfig, key: string, fallback: number, integer: boolean): number {
  const raw = config.get(SECTION, key);
  if (raw === undefined) return fallback;
  const n = Number(raw.trim());
  if (!raw.trim() || !Number.isFinite(n) || (integer && !Number.isInteger(n)))
    throw new SluiceError(
      'MALFORMED',
      `${SECTION}.${key} is not a${integer ? 'n integer' : ' number'} ('${raw}')`,
    );
  return n;
}

export function readAutoGenConfig(config: RepoConfig): AutoGenConfig {
  const formats = (config.getList(SECTION, 'auto-generate.formats') ?? []).map(parseAutoBundleSpec);
  const opt = (key: string): string | undefined => {
    const v = config.get(SECTION, key)?.trim();
    return v ? v : undefined;
  };
  const result: AutoGenConfig = {
    formats,
    onChange: config.getBool(SECTION, 'auto-generate.on-change', false),
    belowBundledRatio: number(config, 'trigger.below-bundled-ratio', 0.95, false),
    triggerRevs: number(config, 'trigger.revs', 1000, true),
  };
  const uploadCommand = opt('upload-command');
  const deleteCommand = opt('delete-command');
  const uploadUrl = opt('upload-url');
  const urlTemplate = opt('url-template');
  if (uploadCommand) result.uploadCommand = uploadCommand;
  if (deleteCommand) result.deleteCommand = deleteCommand;
  if (uploadUrl) {
    if (!/^s3:\/\/[^/]+/.test(uploadUrl))
      throw new SluiceError(
        'MALFORMED',
        `${SECTION}.upload-url must be s3://BUCKET[/PREFIX] ('${uploadUrl}')`,
      );
    result.uploadUrl = uploadUrl;
  }
  if (urlTemplate) result.urlTemplate = urlTemplate;
  return result;
}

/** What refresh and clear need beyond the formats; USAGE naming the missing setting. */
export function requirePublishing(cfg: AutoGenConfig): void {
  if (!cfg.uploadUrl && !cfg.uploadCommand)
    throw new SluiceError('USAGE', `${SECTION}.upload-command or ${SECTION}.upload-url must be set`);
  if (!cfg.urlTemplate) throw new SluiceError('USAGE', `${SECTION}.url-template must be set`);
  if (!cfg.urlTemplate.includes('{basename}'))
    throw new SluiceError('USAGE', `${SECTION}.url-template must contain {basename}`);
}
