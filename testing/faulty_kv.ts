/**
 * A Deno.Kv wrapper that fails chosen operations, to test storage outages. Every read, list, write
 * and atomic commit counts as one operation.
 *
 * @module
 */

/** Which operations fail. */
export class KvFaults {
  /** Operations performed so far. */
  ops = 0;
  /** Fail every operation. */
  down = false;
  /** Fail exactly the operation with this 1-based number. */
  failOp: number | null = null;
  /** Operations that failed. */
  failures = 0;
  /** Awaited before every atomic commit (to hold a transition in flight while something else happens). */
  beforeCommit: (() => Promise<void>) | null = null;

  /** Counts one operation and throws if it is meant to fail. */
  tick(): void {
    this.ops++;
    if (this.down || this.ops === this.failOp) {
      this.failures++;
      throw new TypeError("simulated KV outage");
    }
  }
}

/** Wraps `kv` so that operations fail as `faults` says. */
export function faultyKv(kv: Deno.Kv, faults: KvFaults): Deno.Kv {
  return new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "get" || prop === "getMany" || prop === "set" || prop === "delete") {
        return (...args: unknown[]) => {
          try {
            faults.tick();
          } catch (e) {
            return Promise.reject(e);
          }
          return value.apply(target, args);
        };
      }
      if (prop === "list") {
        return (...args: unknown[]) => {
          const iter = value.apply(target, args) as AsyncIterableIterator<unknown>;
          let first = true;
          return {
            [Symbol.asyncIterator]() {
              return this;
            },
            next() {
              if (first) {
                first = false;
                try {
                  faults.tick();
                } catch (e) {
                  return Promise.reject(e);
                }
              }
              return iter.next();
            },
          };
        };
      }
      if (prop === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = async () => {
            if (faults.beforeCommit) await faults.beforeCommit();
            faults.tick();
            return await commit();
          };
          return op;
        };
      }
      return value.bind(target);
    },
  });
}
