/**
 * Where each job of a limiter stands (`jobStatus`, `jobs`, `counts`), and the jobs waiting in
 * this process by priority: what highWater's strategies drop from (the order itself is the
 * scheduler's queue).
 */
import type { Job } from './job.js';

export type Status = 'RECEIVED' | 'QUEUED' | 'RUNNING' | 'EXECUTING' | 'DONE';
const STATUSES: readonly Status[] = ['RECEIVED', 'QUEUED', 'RUNNING', 'EXECUTING', 'DONE'];
const PRIORITIES = 10;

export class States {
  private readonly status = new Map<string, Status>();
  private readonly waiting: Job[][] = Array.from({ length: PRIORITIES }, () => []);

  constructor(private readonly trackDone: boolean) {}

  has(id: string): boolean {
    return this.status.has(id);
  }

  set(id: string, status: Status): void {
    this.status.set(id, status);
  }

  /** Finished: kept as DONE when `trackDoneStatus`, else forgotten. */
  finish(id: string): void {
    if (this.trackDone) this.status.set(id, 'DONE');
    else this.status.delete(id);
  }

  remove(id: string): boolean {
    return this.status.delete(id);
  }

  of(id: string): Status | null {
    return this.status.get(id) ?? null;
  }

  ids(status?: Status): string[] {
    const ids: string[] = [];
    for (const [id, now] of this.status) if (status === undefined || now === status) ids.push(id);
    return ids;
  }

  counts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const status of STATUSES) if (status !== 'DONE' || this.trackDone) counts[status] = 0;
    for (const status of this.status.values()) counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }

  /** Jobs not yet finished (received to executing). */
  unfinished(): number {
    let count = 0;
    for (const status of this.status.values()) if (status !== 'DONE') count++;
    return count;
  }

  enqueue(job: Job): void {
    this.waiting[job.options.priority]?.push(job);
  }

  dequeue(job: Job): void {
    const list = this.waiting[job.options.priority];
    const index = list?.indexOf(job) ?? -1;
    if (index >= 0) list?.splice(index, 1);
  }

  queued(priority?: number): number {
    if (priority !== undefined) return this.waiting[priority]?.length ?? 0;
    return this.waiting.reduce((sum, list) => sum + list.length, 0);
  }

  /** The newest job of the lowest priority from `priority` down (what LEAK gives up). */
  lastFrom(priority: number): Job | undefined {
    for (let p = PRIORITIES - 1; p >= priority; p--) {
      const list = this.waiting[p];
      if (list !== undefined && list.length > 0) return list[list.length - 1];
    }
    return undefined;
  }

  allQueued(): Job[] {
    return this.waiting.flat();
  }
}
