// The built-in uploader: `[clone-bundles] upload-url = s3://BUCKET/PREFIX`. Endpoint, region and
// credentials come from the AWS SDK's default chain (AWS_* environment, ~/.aws/config and
// credentials, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL); a local endpoint (an IP address or
// localhost, e.g. MinIO or s3rver) is addressed path-style, since it has no per-bucket host names.

import { createReadStream } from 'node:fs';
import { isIP } from 'node:net';
import { DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { SluiceError } from '../../errors';
import type { BundlePublisher } from './publisher';

/** multipart above this, in parts of this size (S3's minimum part is 5 MiB) */
const PART_SIZE = 16 << 20;

export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(url);
  if (!m) throw new SluiceError('MALFORMED', `not an s3://BUCKET/PREFIX URL: ${url}`);
  const prefix = m[2]!.replace(/\/+$/, '');
  return { bucket: m[1]!, prefix: prefix ? `${prefix}/` : '' };
}

function localEndpoint(env: NodeJS.ProcessEnv): boolean {
  const raw = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (!raw) return false;
  try {
    const host = new URL(raw).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || isIP(host) !== 0;
  } catch {
    return false;
  }
}

function uploadError(action: string, target: string, e: unknown): SluiceError {
  const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = err.$metadata?.httpStatusCode ? ` (HTTP ${err.$metadata.httpStatusCode})` : '';
  return new SluiceError(
    'UPLOAD_FAILED',
    `${action} ${target} failed: ${err.name ?? 'Error'}: ${err.message ?? String(e)}${status}`,
  );
}

export function s3Publisher(url: string, env: NodeJS.ProcessEnv = process.env): BundlePublisher {
  const { bucket, prefix } = parseS3Url(url);
  const client = new S3Client({ forcePathStyle: localEndpoint(env) });
  return {
    async upload(path, basename, signal) {
      const key = prefix + basename;
      const upload = new Upload({
        client,
        params: {
          Bucket: bucket,
          Key: key,
          Body: createReadStream(path),
          ContentType: 'application/octet-stream',
        },
        partSize: PART_SIZE,
        queueSize: 2,
        // a failed multipart upload leaves no parts behind to pay for
        leavePartsOnError: false,
      });
      const onAbort = (): void => void upload.abort().catch(() => undefined);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        await upload.done();
      } catch (e) {
        throw uploadError('upload to', `s3://${bucket}/${key}`, e);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    },
    async remove({ basename }, signal) {
      const key = prefix + basename;
      try {
        await client.send(
          new DeleteObjectCommand({ Bucket: bucket, Key: key }),
          signal ? { abortSignal: signal } : {},
        );
      } catch (e) {
        throw uploadError('delete of', `s3://${bucket}/${key}`, e);
      }
    },
  };
}
