// Where auto-generated clone bundles go: the user's commands or the built-in S3 client.

import type { AutoGenConfig } from './auto-config';
import { commandPublisher } from './command-publisher';

export interface BundlePublisher {
  /** makes the local file available under its basename (UPLOAD_FAILED when it cannot) */
  upload(path: string, basename: string, signal?: AbortSignal): Promise<void>;
  /** removes a published bundle (its basename and public URL) from the storage */
  remove(bundle: { basename: string; url: string }, signal?: AbortSignal): Promise<void>;
}

export async function publisherFor(cfg: AutoGenConfig): Promise<BundlePublisher> {
  if (cfg.uploadUrl) {
    // the AWS SDK loads only for repositories that upload to S3
    const { s3Publisher } = await import('./s3-publisher');
    return s3Publisher(cfg.uploadUrl);
  }
  return commandPublisher(cfg.uploadCommand, cfg.deleteCommand);
}
