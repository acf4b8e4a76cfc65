import { AdminApiError } from '../api/client.ts';
import { queryString } from '../../src-shared/contract/admin-client.ts';
import type { StoredItem, StoredKind, UploadQuery } from '../../src-shared/contract/files.ts';

export interface UploadHandle {
  promise: Promise<StoredItem>;
  abort(): void;
}

/** What a package upload may say besides the file: the admin's description, and to keep an APK whose manifest cannot be read. */
export type PackageDescription = Pick<UploadQuery, 'package_name' | 'version_code' | 'version_name' | 'if_unreadable'>;

/**
 * Uploads one file as the raw request body (the admin API streams it to disk), reporting
 * progress. XMLHttpRequest because fetch has no upload progress events.
 */
export function uploadFile(
  kind: StoredKind,
  file: File,
  onProgress: (fraction: number) => void,
  description: PackageDescription = {},
): UploadHandle {
  const xhr = new XMLHttpRequest();
  const promise = new Promise<StoredItem>((resolve, reject) => {
    const path = kind === 'file' ? 'files' : 'packages';
    const query: UploadQuery = {
      name: file.name,
      ...(file.type && /^[\w.+-]+\/[\w.+-]+$/.test(file.type) ? { mime_type: file.type } : {}),
      ...description,
    };
    xhr.open('POST', `/api/${path}${queryString(query)}`);
    xhr.withCredentials = true;
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.setRequestHeader('accept', 'application/json');
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      let body: { error?: string; message?: string } & Partial<StoredItem> = {};
      try {
        body = JSON.parse(xhr.responseText) as typeof body;
      } catch {
        // keep the empty body
      }
      if (xhr.status === 201) {
        onProgress(1);
        resolve(body as StoredItem);
      } else
        reject(
          new AdminApiError(xhr.status, {
            ...body,
            error: body.error ?? `HTTP_${xhr.status}`,
            message: body.message ?? `Upload failed (HTTP ${xhr.status})`,
          }),
        );
    };
    xhr.onerror = () => reject(new AdminApiError(0, { error: 'NETWORK_ERROR', message: 'The upload was interrupted' }));
    xhr.onabort = () => reject(new AdminApiError(0, { error: 'ABORTED', message: 'Upload cancelled' }));
    xhr.send(file);
  });
  return { promise, abort: () => xhr.abort() };
}
