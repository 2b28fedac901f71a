/**
 * The HTTP implementation of `IRunClient`: calls the jupyter_server extension through
 * JupyterLab's `ServerConnection`, which adds the base URL, the auth token and the XSRF
 * header.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { RunApiError, type IApprover, type IRunClient } from './api';
import { parseInbox, type IInboxClient } from './inbox';
import { errorText, isObject, parseDescription, parseVersion } from './parse';
import { API_ROUTES } from './tokens';
import type {
  IDecisionResult,
  IInboxItem,
  IInboxView,
  IMilestoneResult,
  IRunDescription,
  IRunVersion
} from './types';

/** Calls `/skillnb/api/*` on the Jupyter server. */
export class ServerRunClient implements IRunClient, IInboxClient {
  /**
   * @param settings the server connection settings (defaults to the page's)
   */
  constructor(settings?: ServerConnection.ISettings) {
    this._settings = settings ?? ServerConnection.makeSettings();
  }

  async describe(path: string): Promise<IRunDescription> {
    return parseDescription(await this._get(API_ROUTES.run, path));
  }

  /** A run view's saved forms as the server renders them now (`GET /skillnb/api/view`). */
  async savedView(path: string): Promise<unknown> {
    return this._get(API_ROUTES.view, path);
  }

  async version(
    path: string,
    after?: number,
    waitS?: number
  ): Promise<IRunVersion> {
    const wait: { [key: string]: string } =
      after === undefined
        ? {}
        : { after: String(after), wait: String(waitS ?? 20) };
    return parseVersion(await this._get(API_ROUTES.version, path, wait));
  }

  async approve(
    path: string,
    gate: string,
    note?: string
  ): Promise<IDecisionResult> {
    const body = await this._post(API_ROUTES.approve, { path, gate, note });
    return { version: readVersion(body) };
  }

  async reject(
    path: string,
    gate: string,
    note?: string
  ): Promise<IDecisionResult> {
    const body = await this._post(API_ROUTES.reject, { path, gate, note });
    return { version: readVersion(body) };
  }

  async milestone(path: string, name: string): Promise<IMilestoneResult> {
    const body = await this._post(API_ROUTES.milestone, { path, name });
    const event = isObject(body) && isObject(body.event) ? body.event : {};
    return {
      version: readVersion(body),
      event: {
        seq: typeof event.seq === 'number' ? event.seq : 0,
        type: typeof event.type === 'string' ? event.type : 'milestone',
        data: isObject(event.data) ? event.data : {}
      }
    };
  }

  async inbox(): Promise<IInboxView> {
    const body = await this._send(
      URLExt.join(this._settings.baseUrl, API_ROUTES.inbox),
      { method: 'GET' }
    );
    return parseInbox(body);
  }

  async decideInbox(
    item: IInboxItem,
    verdict: 'approve' | 'reject'
  ): Promise<number> {
    const body = await this._post(API_ROUTES.inboxDecide, {
      source: item.source,
      run: item.run,
      gate: item.gate,
      verdict
    });
    return readVersion(body);
  }

  async identity(): Promise<IApprover> {
    const body = await this._send(
      URLExt.join(this._settings.baseUrl, API_ROUTES.identity),
      { method: 'GET' }
    );
    return parseApprover(body);
  }

  private async _get(
    route: string,
    path: string,
    extra: { [key: string]: string } = {}
  ): Promise<unknown> {
    const url =
      URLExt.join(this._settings.baseUrl, route) +
      URLExt.objectToQueryString({ path, ...extra });
    return this._send(url, { method: 'GET' });
  }

  private async _post(
    route: string,
    payload: { [key: string]: string | undefined }
  ): Promise<unknown> {
    const url = URLExt.join(this._settings.baseUrl, route);
    const body = JSON.stringify(payload);
    return this._send(url, { method: 'POST', body });
  }

  private async _send(url: string, init: RequestInit): Promise<unknown> {
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this._settings);
    } catch (reason) {
      throw new RunApiError(
        0,
        `cannot reach the Jupyter server: ${String(reason)}`
      );
    }
    const text = await response.text();
    let body: unknown = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
    }
    if (!response.ok) {
      throw new RunApiError(
        response.status,
        errorText(body, `${response.status} ${response.statusText}`)
      );
    }
    return body;
  }

  private readonly _settings: ServerConnection.ISettings;
}

/** Read the identity route's answer; refuse one without a name. */
export function parseApprover(body: unknown): IApprover {
  if (!isObject(body) || typeof body.name !== 'string' || !body.name) {
    throw new RunApiError(
      0,
      'the server did not say who decisions are recorded as'
    );
  }
  return {
    name: body.name,
    display_name:
      typeof body.display_name === 'string' && body.display_name
        ? body.display_name
        : body.name,
    source: body.source === 'server' ? 'server' : 'run'
  };
}

function readVersion(body: unknown): number {
  return isObject(body) && typeof body.version === 'number' ? body.version : 0;
}
