// Settings that widen what Tessera may reach (IAM_ALLOW_INSECURE_WEBHOOKS, IAM_ALLOW_INSECURE_JWKS)
// are decided for the cluster, in its database, not by each instance's environment: on one
// PostgreSQL a single instance started with a wider setting would otherwise deliver where the
// others refuse to (a mixed cluster silently loses the fence).
//
// - The first instance to start on a database stores its own setting as the cluster's.
// - An instance acts on a widening only when both its own setting and the cluster's allow it:
//   one whose setting is wider than the cluster's never acts on it, and says so at start in one
//   line; one whose setting is narrower keeps its narrower fence.
// - An operator changes the cluster's setting on purpose with `tessera cluster-settings set`;
//   running instances read it again every REFRESH_MS, so a narrowing reaches them all without
//   a restart.
// - SQLite serves one instance: its environment decides, and is stored at each start, so
//   `tessera cluster-settings show` says what the service does.

import type { Store } from '../../store/store.js';
import { type ChangeOrigin, resourceEvent } from '../changes.js';
import type { OutboundPolicy } from '../outbound-fence.js';

/** How often running instances read the cluster's settings again. */
export const REFRESH_MS = 10_000;

export type WideningSettingName = 'allow-insecure-webhooks' | 'allow-insecure-jwks';

interface WideningSetting {
  /** Its row in the settings table. */
  stored: string;
  /** The environment variable of an instance's own setting. */
  variable: string;
  /** What it lets the service do, for the log. */
  widens: string;
  /** What the fence still does when it is off, for the log. */
  fenced: string;
}

export const WIDENING_SETTINGS: Record<WideningSettingName, WideningSetting> = {
  'allow-insecure-webhooks': {
    stored: 'cluster.allow_insecure_webhooks',
    variable: 'IAM_ALLOW_INSECURE_WEBHOOKS',
    widens: 'webhooks may deliver over http and to private addresses',
    fenced: 'webhooks deliver only over https to public addresses',
  },
  'allow-insecure-jwks': {
    stored: 'cluster.allow_insecure_jwks',
    variable: 'IAM_ALLOW_INSECURE_JWKS',
    widens: 'outside JWKS may be fetched over http and from private addresses',
    fenced: 'outside JWKS are fetched only over https from public addresses',
  },
};

const NAMES = Object.keys(WIDENING_SETTINGS) as WideningSettingName[];

export function isWideningSettingName(name: string): name is WideningSettingName {
  return (NAMES as string[]).includes(name);
}

/** One widening setting as an instance sees it. */
export interface WideningState {
  name: WideningSettingName;
  /** This instance's own setting (its environment). */
  instance: boolean;
  /** The cluster's, as stored. */
  cluster: boolean;
  /** What this instance acts on: both must allow it. */
  effective: boolean;
}

export interface SettingsLog {
  info(message: string): void;
  warn(message: string): void;
}

/**
 * The widening settings an instance acts on, kept in agreement with the cluster's. The
 * policies it hands out read the current value at each use (the outbound fence asks them per
 * request), so a change of the cluster's setting reaches deliveries and fetches at once.
 */
export class ClusterSettings {
  readonly #effective: Record<WideningSettingName, boolean>;
  readonly #cluster: Partial<Record<WideningSettingName, boolean>> = {};
  /** The outbound policy of webhook deliveries (and of webhook URLs at creation). */
  readonly webhooks: OutboundPolicy;
  /** The outbound policy of outside JWKS fetches. */
  readonly jwks: OutboundPolicy;

  constructor(
    private readonly deps: {
      store: Store;
      /** This instance's own settings, from its environment. */
      instance: Record<WideningSettingName, boolean>;
      /** True where one instance serves the database (SQLite): its own settings decide. */
      decidesAlone: boolean;
      log: SettingsLog;
    },
  ) {
    // Fenced until the cluster's settings are read: never wider than both.
    this.#effective = { 'allow-insecure-webhooks': false, 'allow-insecure-jwks': false };
    const effective = this.#effective;
    this.webhooks = {
      get allowInsecure() {
        return effective['allow-insecure-webhooks'];
      },
    };
    this.jwks = {
      get allowInsecure() {
        return effective['allow-insecure-jwks'];
      },
    };
  }

  /**
   * At start: stores this instance's settings as the cluster's where none is stored yet (or
   * always, where it decides alone), then acts on what both allow and says so, one line per
   * setting that differs.
   */
  async prepare(): Promise<WideningState[]> {
    const states: WideningState[] = [];
    for (const name of NAMES) {
      const { stored } = WIDENING_SETTINGS[name];
      const own = this.deps.instance[name];
      let cluster: boolean;
      if (this.deps.decidesAlone) {
        await this.deps.store.settings.putSetting(stored, String(own));
        cluster = own;
      } else {
        cluster = parse(await this.deps.store.settings.getOrCreateSetting(stored, String(own)));
      }
      const state = this.#apply(name, cluster);
      this.#report(state);
      states.push(state);
    }
    return states;
  }

  /** Reads the cluster's settings again; a change is acted on and logged. */
  async refresh(): Promise<void> {
    if (this.deps.decidesAlone) return;
    for (const name of NAMES) {
      const value = await this.deps.store.settings.findSetting(WIDENING_SETTINGS[name].stored);
      if (value === undefined || parse(value) === this.#cluster[name]) continue;
      const state = this.#apply(name, parse(value));
      const { variable } = WIDENING_SETTINGS[name];
      this.deps.log.warn(
        `the cluster's ${name} changed to ${state.cluster} (${variable} here: ${state.instance}); ` +
          `this instance now acts on ${state.effective}`,
      );
    }
  }

  /** Refreshes every REFRESH_MS in the background; returns stop. */
  refreshPeriodically(onError: (error: unknown) => void, everyMs = REFRESH_MS): () => void {
    if (this.deps.decidesAlone) return () => {};
    const timer = setInterval(() => void this.refresh().catch(onError), everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  #apply(name: WideningSettingName, cluster: boolean): WideningState {
    const instance = this.deps.instance[name];
    this.#cluster[name] = cluster;
    this.#effective[name] = instance && cluster;
    return { name, instance, cluster, effective: this.#effective[name] };
  }

  #report(state: WideningState): void {
    const { variable, widens, fenced } = WIDENING_SETTINGS[state.name];
    if (state.effective) {
      this.deps.log.warn(`${variable}=true: ${widens}; never in production`);
    } else if (state.instance) {
      this.deps.log.warn(
        `${variable}=true is not acted on: the cluster's setting, stored in its database, is false, ` +
          `so ${fenced}. To change it for every instance: tessera cluster-settings set ${state.name} true`,
      );
    } else if (state.cluster) {
      this.deps.log.info(
        `the cluster allows ${state.name}, but ${variable} is not true here: this instance keeps ` +
          `the fence (${fenced})`,
      );
    }
  }
}

/** The cluster's stored settings (null: not decided yet: no instance has started). */
export async function readClusterSettings(
  store: Store,
): Promise<Record<WideningSettingName, boolean | null>> {
  const values = await Promise.all(
    NAMES.map((name) => store.settings.findSetting(WIDENING_SETTINGS[name].stored)),
  );
  return Object.fromEntries(
    NAMES.map((name, index) => [name, values[index] === undefined ? null : parse(values[index])]),
  ) as Record<WideningSettingName, boolean | null>;
}

/**
 * Changes the cluster's setting, recorded as a `cluster_setting.changed` event (nothing, and no
 * event, when it has that value already); running instances act on it within REFRESH_MS.
 * Whether it changed.
 */
export async function changeClusterSetting(
  store: Store,
  name: WideningSettingName,
  value: boolean,
  origin: ChangeOrigin,
  now: number,
): Promise<boolean> {
  const before = (await readClusterSettings(store))[name];
  const event = resourceEvent({
    type: 'cluster_setting.changed',
    origin,
    occurredAt: now,
    clientId: null,
    resource: { type: 'cluster_setting', id: { name } },
    changes: [{ member: 'value', before, after: value }],
  });
  return store.settings.changeSetting(WIDENING_SETTINGS[name].stored, String(value), [event]);
}

function parse(value: string): boolean {
  return value === 'true';
}
