// Bulk jobs (issue 25): starting one, the history, one job with each device's result. Kept current
// by the live stream: every job.* event refreshes the 'jobs' keys (live/cache-sync.ts).
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import type { JobBody, JobResultStatus } from '../../src-shared/contract/index.ts';
import { admin } from './client.ts';

export const jobKeys = {
  all: ['jobs'] as const,
  list: ['jobs', 'list'] as const,
  one: (id: number, status: JobResultStatus | null) => ['jobs', 'one', id, status] as const,
};

export function useJobs() {
  return useQuery({
    queryKey: jobKeys.list,
    queryFn: async ({ signal }) => (await admin.jobs.list({ query: { limit: 200 }, signal })).items,
  });
}

export function useJob(id: number, status: JobResultStatus | null = null) {
  return useQuery({
    queryKey: jobKeys.one(id, status),
    queryFn: ({ signal }) => admin.jobs.get({ params: { id }, ...(status === null ? {} : { query: { status } }), signal }),
    structuralSharing: false,
    // Another status filter shows the results it had until its own arrive.
    placeholderData: keepPreviousData,
  });
}

/** Starts a job; the answer is the job (its devices are acted on afterwards). */
export function useStartJob() {
  return useMutation({ mutationFn: (body: JobBody) => admin.jobs.create({ body }) });
}
