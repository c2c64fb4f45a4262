/**
 * A real OTLP/HTTP receiver on loopback, JSON encoding (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`): it takes
 * `POST /v1/traces`, `/v1/metrics` and `/v1/logs` as Deno's exporter sends them, keeps every body as
 * received (for the canary check) and parsed (for the assertions), and answers as a collector does.
 *
 * @module
 */

/** One OTLP attribute. */
export interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}

/** A span, flattened with its resource's `service.name`. */
export interface ReceivedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number };
}

/** A metric data point, flattened with its resource's `service.name` and metric name. */
export interface ReceivedPoint {
  service: string;
  metric: string;
  unit: string;
  kind: "sum" | "gauge" | "histogram";
  attributes: Record<string, string | number | boolean>;
  /** Sums and gauges: the value; histograms: the count. */
  value: number;
  sum?: number;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: the `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  endpoint: string;
  /** Every request body, as received, by signal. */
  raw: { traces: string[]; metrics: string[]; logs: string[] };
  spans(): ReceivedSpan[];
  points(): ReceivedPoint[];
  close(): Promise<void>;
}

function attrs(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const a of list ?? []) {
    const v = a.value;
    out[a.key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
      v.doubleValue ??
      v.boolValue ?? "";
  }
  return out;
}

/** Starts the receiver on 127.0.0.1, a free port. */
export function startOtlpReceiver(): OtlpReceiver {
  const raw = { traces: [] as string[], metrics: [] as string[], logs: [] as string[] };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const body = await req.text();
    if (req.method !== "POST") return new Response(null, { status: 405 });
    if (path === "/v1/traces") raw.traces.push(body);
    else if (path === "/v1/metrics") raw.metrics.push(body);
    else if (path === "/v1/logs") raw.logs.push(body);
    else return new Response(null, { status: 404 });
    if (!(req.headers.get("content-type") ?? "").includes("json")) {
      return new Response("expected http/json", { status: 415 });
    }
    return Response.json({});
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    raw,
    spans() {
      const out: ReceivedSpan[] = [];
      for (const body of raw.traces) {
        for (const rs of JSON.parse(body).resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)["service.name"] ?? "");
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              out.push({
                service,
                scope: ss.scope?.name ?? "",
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? "",
                name: s.name,
                kind: s.kind,
                attributes: attrs(s.attributes),
                status: s.status ?? {},
              });
            }
          }
        }
      }
      return out;
    },
    points() {
      const out: ReceivedPoint[] = [];
      for (const body of raw.metrics) {
        for (const rm of JSON.parse(body).resourceMetrics ?? []) {
          const service = String(attrs(rm.resource?.attributes)["service.name"] ?? "");
          for (const sm of rm.scopeMetrics ?? []) {
            for (const m of sm.metrics ?? []) {
              const kind = m.sum ? "sum" : m.gauge ? "gauge" : m.histogram ? "histogram" : null;
              if (!kind) continue;
              for (const p of m[kind].dataPoints ?? []) {
                out.push({
                  service,
                  metric: m.name,
                  unit: m.unit ?? "",
                  kind,
                  attributes: attrs(p.attributes),
                  value: kind === "histogram" ? Number(p.count) : Number(p.asDouble ?? p.asInt ?? 0),
                  ...(kind === "histogram" ? { sum: Number(p.sum) } : {}),
                });
              }
            }
          }
        }
      }
      return out;
    },
    async close() {
      await server.shutdown();
    },
  };
}
