/**
 * The client seam between the run model and the server extension: an interface the model
 * depends on and the error it raises. The HTTP implementation is in `request.ts`; tests
 * pass an in-memory double.
 */
import type {
  IDecisionResult,
  IMilestoneResult,
  IRunDescription,
  IRunVersion
} from './types';

/** An error answer of the server extension. */
export class RunApiError extends Error {
  /**
   * @param status the HTTP status (0 when the server could not be reached)
   * @param message the server's `error` text, or a description of the failure
   */
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
    this.name = 'RunApiError';
  }

  /** True when the notebook has no SKILL.nb run (no sidecar) yet. */
  get isMissing(): boolean {
    return this.status === 404;
  }
}

/** Who a decision from this page is recorded as (`GET /skillnb/api/identity`). */
export interface IApprover {
  /** Recorded as the approval's `decided_by`. */
  name: string;
  /** A friendlier name to show beside it (equal to `name` when there is none). */
  display_name: string;
  /** `server`: the Jupyter server's signed-in user; `run`: the run's default user. */
  source: 'server' | 'run';
}

/** What the run model needs from the server. Paths are relative to the server root. */
export interface IRunClient {
  /** `run.describe()` of the notebook's run; rejects with `RunApiError` (404: no run). */
  describe(path: string): Promise<IRunDescription>;
  /**
   * The run's version, cheap; `exists: false` when there is no sidecar. With `after`, a
   * live (team-store) run answers once its version passes `after` or `waitS` seconds end.
   */
  version(path: string, after?: number, waitS?: number): Promise<IRunVersion>;
  /** Approve the pending request of `gate`. */
  approve(path: string, gate: string, note?: string): Promise<IDecisionResult>;
  /** Reject the pending request of `gate`. */
  reject(path: string, gate: string, note?: string): Promise<IDecisionResult>;
  /** Record a milestone named `name`. */
  milestone(path: string, name: string): Promise<IMilestoneResult>;
  /** Who decisions made through this client are recorded as. */
  identity(): Promise<IApprover>;
}
