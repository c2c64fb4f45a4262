/**
 * The session service: the session logic behind the `/v1/sessions` routes, on the API side of the
 * service. It validates, claims idempotency keys and concurrency slots, writes new records, and reaches the
 * sessions through a {@link SessionHost} — in-process or on a remote worker — without running them itself.
 * The state machine is in `src/vocabulary/session_states.ts`; the worker writes the transitions only the
 * host of a session knows of.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { ApiError } from "../errors.ts";
import { newSessionId } from "../ids.ts";
import {
  canonicalJson,
  claimIdempotencyKey,
  completeIdempotencyKey,
  dropIdempotencyRecord,
  type IdempotencyRecord,
  releaseIdempotencyKey,
} from "../kv/idempotency.ts";
import { retryUnavailable } from "../kv/guard.ts";
import {
  claimUnansweredEnd,
  getSession,
  insertSession,
  PlacementFullError,
  transitionSession,
} from "../kv/sessions.ts";
import { getOrCreateWebhookSecret } from "../kv/webhook_secrets.ts";
import { generateWebhookSecret } from "../webhooks/sign.ts";
import { readSessionCached } from "../kv/handle_state.ts";
import type { Logger } from "../log.ts";
import { checkProviderConfigShape } from "../providers/definitions/config_schema.ts";
import type { ProviderType } from "../providers/definitions/provider_types.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { TokenService } from "../auth/tokens.ts";
import type { SessionHost } from "./session_host.ts";
import type {
  ClientToken,
  CreatedSession,
  EndedSession,
  SessionView,
  StreamEndpoints,
} from "../vocabulary/schemas.ts";
import { checkWebhookUrl, dnsResolver, type Resolver, WebhookUrlError } from "../webhooks/url_guard.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { isEnded } from "../vocabulary/session_states.ts";
import { toView } from "../vocabulary/session_view.ts";
import { notActiveError } from "../vocabulary/not_active_error.ts";
import { resolveTransport } from "./resolve_transport.ts";
import { alwaysServed } from "../vocabulary/transports.ts";
import type { RequestedTransport } from "../vocabulary/transports.ts";
import { AVATAR_CATALOG, resolveAvatarConfig } from "../vocabulary/avatar_catalog.ts";
import { getAvatar } from "../kv/avatars.ts";
import { kvOp } from "../kv/guard.ts";
import { AVATAR_ID_PATTERN } from "../ids.ts";
import { ATTR, SPAN } from "../telemetry/names.ts";
import { recordStartDuration } from "../telemetry/metrics.ts";
import { annotate, inSpan } from "../telemetry/tracing.ts";

/** How many workers a create tries when the ones it picked turn out to be full. */
const PLACEMENT_ATTEMPTS = 5;

/** The authenticated caller. */
export interface Caller {
  projectId: string;
  keyId: string;
}

/** A validated create-session body (without the provider credentials, which travel in a holder). */
export interface CreateSessionInput {
  provider_type: ProviderType;
  provider_config: Record<string, Record<string, unknown> | undefined>;
  avatar_config?: { avatar_id?: string; bg_id?: string };
  transport: RequestedTransport;
  webhook_url?: string;
}

/** Dependencies of the session service. */
export interface SessionServiceDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Pick<Config, "maxConcurrentSessions" | "webhooks" | "providers">;
  /** Where sessions run. */
  host: SessionHost;
  tokens: TokenService;
  logger: Logger;
  /** How long a concurrent duplicate (same Idempotency-Key) waits for the first request. */
  idempotencyWaitMs?: number;
  /** Resolves webhook hosts for the destination check at creation (default: the system DNS). */
  resolve?: Resolver;
}

/** The session logic behind the `/v1/sessions` routes. */
export class SessionService {
  constructor(readonly deps: SessionServiceDeps) {}

  /**
   * Creates and starts a session; answers only once it is `active` (or throws the mapped error). The
   * credentials are in `credentials` (built from the request body's bytes); they are zeroed here, whatever
   * happens, once handed to the worker.
   */
  async create(
    caller: Caller,
    input: CreateSessionInput,
    credentials: CredentialHolder,
    idempotencyKey: string | undefined,
  ): Promise<{ session: CreatedSession; replayed: boolean }> {
    const started = performance.now();
    try {
      return await inSpan(SPAN.create, {
        attributes: {
          [ATTR.projectId]: caller.projectId,
          [ATTR.providerType]: input.provider_type,
          [ATTR.transport]: input.transport,
        },
      }, async () => {
        const out = await this.#create(caller, input, credentials, idempotencyKey);
        if (!out.replayed) {
          recordStartDuration(
            (performance.now() - started) / 1000,
            input.provider_type,
            out.session.transport,
          );
        }
        return out;
      });
    } finally {
      credentials.zero();
    }
  }

  async #create(
    caller: Caller,
    input: CreateSessionInput,
    credentials: CredentialHolder,
    idempotencyKey: string | undefined,
  ): Promise<{ session: CreatedSession; replayed: boolean }> {
    const { kv, clock, config, tokens, host } = this.deps;
    const shapeError = checkProviderConfigShape(input.provider_type, input.provider_config, {
      providers: config.providers,
      now: clock.now(),
      credentials,
    });
    if (shapeError) throw new ApiError("SVC_PROVIDER_MISCONFIGURED", shapeError);
    // `auto` prefers the SFU when a worker serves it; `webrtc_sfu` without one fails closed. A transport
    // every worker serves needs no look-up.
    const served = input.transport !== "auto" && alwaysServed().includes(input.transport)
      ? []
      : await host.availableTransports();
    const transport = resolveTransport(input.transport, served);
    // Unknown avatars are refused before anything is written; omitted ids take the catalog's defaults.
    const avatar = resolveAvatarConfig(AVATAR_CATALOG, input.avatar_config, { projectAvatars: true });
    if (AVATAR_ID_PATTERN.test(avatar.avatarId)) {
      // A project avatar: the caller's project's, and not deleted (running sessions keep theirs).
      const rec = await kvOp(() => getAvatar(kv, caller.projectId, avatar.avatarId));
      if (!rec || rec.deleted_at) {
        throw new ApiError(
          "SVC_RENDER_MISCONFIGURED",
          "avatar_config.avatar_id: the project has no avatar with this id (deleted or never created; GET /v1/avatars lists them).",
        );
      }
    }
    if (!tokens.available) throw new ApiError("SVC_TOKEN_SECRET_NOT_CONFIGURED");
    if (input.webhook_url !== undefined) await this.#checkWebhookUrl(caller.projectId, input.webhook_url);

    let claim: { key: string; versionstamp: string; record: IdempotencyRecord } | null = null;
    if (idempotencyKey !== undefined) {
      const fingerprint = await this.#fingerprint(input, credentials);
      const outcome = await this.#claim(caller.projectId, idempotencyKey, fingerprint);
      if (outcome.kind === "replay") {
        annotate({ [ATTR.sessionId]: outcome.sessionId, "avatar.idempotent_replay": true });
        return { session: await this.#replay(caller, outcome.sessionId), replayed: true };
      }
      claim = { key: idempotencyKey, versionstamp: outcome.versionstamp, record: outcome.record };
    }
    const release = async () => {
      if (claim) {
        await releaseIdempotencyKey(kv, caller.projectId, claim.key, claim.record.claim_id).catch(() => {});
      }
    };

    const sessionId = newSessionId();
    annotate({ [ATTR.sessionId]: sessionId, [ATTR.transport]: transport });
    const record: SessionRecord = {
      session_id: sessionId,
      project_id: caller.projectId,
      status: "created",
      provider_type: input.provider_type,
      transport,
      avatar_id: avatar.avatarId,
      bg_id: avatar.bgId,
      webhook_url: input.webhook_url ?? null,
      created_at: clock.now(),
      started_at: null,
      ended_at: null,
      warning: null,
      error_code: null,
      end_reason: null,
      chunks_rendered: 0,
      created_by: caller.keyId,
      owner: null,
    };
    // Place it: the record, its project slot and its place on a worker are written in one atomic operation.
    let placement;
    try {
      const full = new Set<string>();
      for (let attempt = 0;; attempt++) {
        placement = await host.place(full, transport);
        record.owner = placement.owner;
        try {
          await insertSession(kv, record, config.maxConcurrentSessions, {
            ownerCapacity: placement.capacity,
            idempotency: claim
              ? {
                key: claim.key,
                versionstamp: claim.versionstamp,
                value: { ...claim.record, session_id: sessionId },
              }
              : undefined,
          });
          break;
        } catch (err) {
          if (!(err instanceof PlacementFullError)) throw err;
          full.add(placement.owner);
          if (attempt + 1 >= PLACEMENT_ATTEMPTS) throw new ApiError("SVC_RENDER_CAPACITY");
        }
      }
    } catch (err) {
      await release();
      throw err;
    }

    let endpoints: StreamEndpoints;
    try {
      endpoints = await host.start(placement, {
        sessionId,
        projectId: caller.projectId,
        providerType: input.provider_type,
        transport,
        avatarId: record.avatar_id,
        bgId: record.bg_id,
      }, credentials);
    } catch (err) {
      // The worker records its own failures; this covers a worker that could not be reached or vanished.
      await this.#markFailed(record, err instanceof ApiError ? err : new ApiError("SVC_INTERNAL_ERROR"));
      await release();
      throw err;
    }
    if (claim) await completeIdempotencyKey(kv, caller.projectId, claim.key, sessionId).catch(() => {});
    return { session: await this.#answer({ ...record, status: "active" }, endpoints), replayed: false };
  }

  /** The public view of one session of the caller's project. */
  async get(caller: Caller, sessionId: string): Promise<SessionView> {
    // At most a few ms old across processes; this process's own writes are always seen (session_cache.ts).
    const rec = await readSessionCached(this.deps.kv, caller.projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    return toView(rec);
  }

  /** Ends an active session (graceful with the 10 s teardown timeout, or forced), through its owner. */
  end(caller: Caller, sessionId: string, force: boolean): Promise<EndedSession> {
    return inSpan(SPAN.end, {
      attributes: { [ATTR.projectId]: caller.projectId, [ATTR.sessionId]: sessionId },
    }, () => this.#end(caller, sessionId, force));
  }

  async #end(caller: Caller, sessionId: string, force: boolean): Promise<EndedSession> {
    // A terminal state read from the cache is final; a live one is moved by compare-and-set below (the
    // host reads it again); an unknown one is read again from KV (it may have been created just now).
    const rec = await readSessionCached(this.deps.kv, caller.projectId, sessionId) ??
      await getSession(this.deps.kv, caller.projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    if (isEnded(rec.status)) {
      // The retry of an end answered 503 while its record could not be written gets that end.
      const answer = await claimUnansweredEnd(this.deps.kv, rec, this.deps.clock.now());
      if (answer) return answer;
    }
    // `ending` goes to the owner too: a retried end whose teardown is done completes there.
    if (rec.status !== "active" && rec.status !== "ending") throw notActiveError(rec);
    const ended = await this.deps.host.end(rec, {
      force,
      reason: force ? "ended_by_api_forced" : "ended_by_api",
    });
    this.deps.logger.info("session ended", { session_id: sessionId, status: ended.status, forced: force });
    return ended;
  }

  /** Mints a fresh client token and session token for an active session. */
  async mintClientToken(caller: Caller, sessionId: string): Promise<ClientToken> {
    const rec = await readSessionCached(this.deps.kv, caller.projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    if (!this.deps.tokens.available) throw new ApiError("SVC_TOKEN_SECRET_NOT_CONFIGURED");
    if (rec.status !== "active") throw notActiveError(rec);
    const { client_token, expires_at, stream_metadata, transport } = await this.#answer(
      rec,
      await this.deps.host.stream(rec),
    );
    return { client_token, expires_at, stream_metadata, transport };
  }

  async #answer(rec: SessionRecord, endpoints: StreamEndpoints): Promise<CreatedSession> {
    const { tokens } = this.deps;
    const client = await tokens.mint(rec.session_id, rec.project_id, "client");
    const media = await tokens.mint(rec.session_id, rec.project_id, "media");
    return {
      client_token: client.token,
      expires_at: client.expiresAt,
      session_id: rec.session_id,
      status: rec.status,
      stream_metadata: {
        ice_servers: endpoints.ice_servers,
        session_token: media.token,
        sfu_endpoint: endpoints.sfu_endpoint,
        media_url: endpoints.media_url,
        transport: rec.transport,
      },
      transport: rec.transport,
    };
  }

  async #replay(caller: Caller, sessionId: string): Promise<CreatedSession> {
    const rec = await getSession(this.deps.kv, caller.projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    // An active session replays with fresh endpoints (TURN credentials); an ended one with the endpoints it
    // had (they no longer serve media).
    const endpoints = rec.status === "active" ? await this.deps.host.stream(rec).catch(() => null) : null;
    const had = rec.stream ?? { media_url: null, sfu_endpoint: null };
    return await this.#answer(rec, endpoints ?? { ...had, ice_servers: [] });
  }

  /** Refuses (400) a webhook_url that is not https or points at a blocked address; creates the secret. */
  async #checkWebhookUrl(projectId: string, url: string): Promise<void> {
    const { config, clock } = this.deps;
    try {
      await checkWebhookUrl(url, config.webhooks.allowPrivate, this.deps.resolve ?? dnsResolver(2000));
    } catch (err) {
      if (!(err instanceof WebhookUrlError)) throw err;
      // A name that does not resolve now may later: delivery checks again.
      if (!err.transient) throw new ApiError("SVC_INVALID_REQUEST", `${err.message}.`);
    }
    // Operators can read the signing secret before the first event is sent.
    await getOrCreateWebhookSecret(this.deps.kv, projectId, clock.now(), generateWebhookSecret);
  }

  /**
   * The HMAC of the canonical body (where the credentials are stand-ins) and of the credentials' digest
   * (their bytes hashed in JavaScript: `CredentialHolder.digest`), so a retry with other credentials is
   * another body.
   */
  async #fingerprint(input: CreateSessionInput, credentials: CredentialHolder): Promise<string> {
    const key = await this.deps.tokens.deriveKey("idempotency-fingerprint/v2");
    const digest = Array.from(credentials.digest(), (b) => b.toString(16).padStart(2, "0")).join("");
    const text = `${canonicalJson(input)}\n${digest}`;
    const mac = await crypto.subtle.sign("HMAC", key!, new TextEncoder().encode(text));
    return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  /** Claims the key, or waits for a concurrent duplicate to finish and replays it. */
  async #claim(
    projectId: string,
    key: string,
    fingerprint: string,
  ): Promise<
    { kind: "claimed"; versionstamp: string; record: IdempotencyRecord } | {
      kind: "replay";
      sessionId: string;
    }
  > {
    const { kv, clock } = this.deps;
    const waitUntil = clock.now() + (this.deps.idempotencyWaitMs ?? 15_000);
    for (;;) {
      const r = await claimIdempotencyKey(kv, projectId, key, fingerprint, clock.now());
      if (r.kind === "mismatch") throw new ApiError("SVC_IDEMPOTENCY_KEY_REUSED");
      if (r.kind === "claimed") return r;
      // "done", or in flight with its session already written: look at the session.
      if (r.record.session_id !== null) {
        const rec = await getSession(kv, projectId, r.record.session_id);
        // Replay only what a create answered (or is answering) 200 for; a failed or vanished session
        // frees the key.
        if (!rec || rec.status === "failed") {
          await dropIdempotencyRecord(kv, projectId, key, r.versionstamp);
          continue;
        }
        if (rec.status !== "created" && rec.status !== "activating") {
          return { kind: "replay", sessionId: rec.session_id };
        }
      }
      if (clock.now() >= waitUntil) throw new ApiError("SVC_IDEMPOTENCY_IN_PROGRESS");
      await clock.sleep(50);
    }
  }

  /** Marks a session whose start failed before its worker could record it (the worker is unreachable). */
  async #markFailed(record: SessionRecord, err: ApiError): Promise<void> {
    try {
      await retryUnavailable(() =>
        transitionSession(
          this.deps.kv,
          record.project_id,
          record.session_id,
          ["created", "activating"],
          "failed",
          {
            error_code: err.code,
            end_reason: "start_failed",
            ended_at: this.deps.clock.now(),
          },
          this.deps.clock.now(),
        )
      );
    } catch (e) {
      // The worker's stale-start sweep, or the reaper if the worker is gone, fails it later.
      this.deps.logger.warn("could not record a failed start now", {
        session_id: record.session_id,
        error: String(e).slice(0, 200),
      });
    }
  }
}
